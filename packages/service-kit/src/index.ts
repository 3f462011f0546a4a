export * from './env.js';
export * from './logger.js';
export * from './redact.js';
export * from './http.js';
export * from './bubblewrap.js';

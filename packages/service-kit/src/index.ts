export * from './env.js';
export * from './logger.js';
export * from './redact.js';
export * from './http.js';
export * from './bubblewrap.js';
export * from './sandbox-namespace.js';
export * from './inherited-descriptors.js';
export * from './agent-env.js';

export * from './errors.js';
export * from './sbx-error.js';
export * from './scopes.js';

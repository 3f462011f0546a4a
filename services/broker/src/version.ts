/** Reported by /healthz; bumped with releases. */
export const BROKER_VERSION = '0.1.0';

/** Reported by /healthz; bumped with releases. */
export const AGENT_VERSION = '0.1.0';

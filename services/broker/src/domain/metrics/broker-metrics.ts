// What the broker's domain reports to its metrics, without knowing how they are
// kept: the composition root passes an implementation (adapters/metrics, on
// prom-client); code and tests that do not care get NO_METRICS.

/** How a sandbox's provisioning ended: its agent answered, or the provider failed. */
export type ProvisioningOutcome = 'ok' | 'failed';

export interface BrokerMetrics {
  /** An audit row was written (token issuance, sandbox state changes …), with its outcome. */
  audited(action: string, outcome: string): void;
  /** The provider's `create` ran for `seconds`. */
  provisioned(outcome: ProvisioningOutcome, seconds: number): void;
  /** The lease reaper moved a sandbox from one state to another (or failed to). */
  reaped(to: string, reason: string, outcome: 'ok' | 'failed'): void;
  /** A request was refused with 429 in a rate-limit bucket. */
  rateLimited(bucket: string): void;
  /** A caller's credentials were refused (`code`: UNAUTHENTICATED, BACKEND_UNAVAILABLE …). */
  authRejected(code: string): void;
}

export const NO_METRICS: BrokerMetrics = Object.freeze({
  audited: () => {},
  provisioned: () => {},
  reaped: () => {},
  rateLimited: () => {},
  authRejected: () => {},
});

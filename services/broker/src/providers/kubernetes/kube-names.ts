// How a sandbox's Kubernetes objects are named and labelled. Sandbox ids allow characters
// Kubernetes names do not (`_`, `:`, `.`, capitals) and run up to 200 characters, so a name
// is a readable slug of the id plus a hash of the whole id; the exact id rides in an annotation.
import { createHash } from 'node:crypto';

export const LABEL_SANDBOX_ID = 'sbx.dev/sandbox-id';
export const LABEL_TENANT_ID = 'sbx.dev/tenant-id';
export const LABEL_MANAGED_BY = 'sbx.dev/managed-by';
/** The NetworkPolicies in deploy/ select `off` pods to take their egress away. */
export const LABEL_NETWORK = 'sbx.dev/network';
export const MANAGED_BY = 'sbx-broker';
export const MANAGED_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;

/** The exact sandbox id (labels cannot hold every id). */
export const ANNOTATION_SANDBOX_ID = 'sbx.dev/sandbox-id';
/** What `start` needs to rebuild the pod after a suspend (no key, token or environment). */
export const ANNOTATION_RECORD = 'sbx.dev/record';

const MAX_SLUG = 48;
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)$/;

function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 10);
}

/**
 * `sbx-<slug>-<hash>`: a DNS-1035 label of at most 63 characters, so it serves as the name of
 * the pod, Secret, PVC, Service (and its DNS name) and agent-sandbox objects alike.
 */
export function sandboxResourceName(sandboxId: string): string {
  const slug = sandboxId
    .toLowerCase()
    .replaceAll(/[^a-z0-9]+/g, '-')
    .slice(0, MAX_SLUG)
    .replaceAll(/^-+|-+$/g, '');
  return slug === '' ? `sbx-${shortHash(sandboxId)}` : `sbx-${slug}-${shortHash(sandboxId)}`;
}

export const sidecarSecretName = (name: string): string => `${name}-sidecar`;

/** The value itself when Kubernetes accepts it as a label value, else a hash that stays unique. */
export function labelValue(value: string): string {
  return LABEL_VALUE.test(value) ? value : `h-${shortHash(value)}`;
}

export const sandboxSelector = (sandboxId: string): string =>
  `${MANAGED_SELECTOR},${LABEL_SANDBOX_ID}=${labelValue(sandboxId)}`;

export function sandboxLabels(
  sandboxId: string,
  tenantId: string,
  network: 'on' | 'off',
): Record<string, string> {
  return {
    [LABEL_SANDBOX_ID]: labelValue(sandboxId),
    [LABEL_TENANT_ID]: labelValue(tenantId),
    [LABEL_MANAGED_BY]: MANAGED_BY,
    [LABEL_NETWORK]: network,
  };
}

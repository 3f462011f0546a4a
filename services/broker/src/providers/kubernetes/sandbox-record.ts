// What the provider keeps of a sandbox in the cluster itself, as an annotation on its Secret,
// so any broker replica (or the next one) can resume it: no key, token or environment here.
import { z } from 'zod';
import type { V1Secret } from '@kubernetes/client-node';
import { DEFAULT_SANDBOX_LIMITS, SandboxLimits } from '../sandbox-limits.js';
import type { SandboxSpec } from '../provider.js';
import { ANNOTATION_RECORD } from './kube-names.js';

export const KubeSandboxRecord = z.object({
  sandboxId: z.string(),
  tenantId: z.string(),
  tokenIssuer: z.string(),
  network: z.enum(['on', 'off']),
  limits: SandboxLimits,
  image: z.string(),
  sidecarImage: z.string().optional(),
});
export type KubeSandboxRecord = z.infer<typeof KubeSandboxRecord>;

export function recordOf(
  spec: SandboxSpec,
  image: string,
  templateImages: Readonly<Record<string, string>>,
): KubeSandboxRecord {
  return {
    sandboxId: spec.sandboxId,
    tenantId: spec.tenantId,
    tokenIssuer: spec.tokenIssuer,
    network: spec.network,
    limits: spec.limits ?? DEFAULT_SANDBOX_LIMITS,
    image: (spec.template === undefined ? undefined : templateImages[spec.template]) ?? image,
    ...(spec.sidecar === undefined ? {} : { sidecarImage: spec.sidecar.image }),
  };
}

/** The record on a sandbox's Secret; undefined when it is missing or not one this provider wrote. */
export function recordFromSecret(secret: V1Secret): KubeSandboxRecord | undefined {
  const text = secret.metadata?.annotations?.[ANNOTATION_RECORD];
  if (text === undefined) return undefined;
  try {
    const parsed = KubeSandboxRecord.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

// The sandbox's Secret as the provider reads and updates it: its key (for the broker's own
// health probes), its record, and the revocation list and key the agent reads from the
// projected volume. Updates replace the Secret at the resourceVersion read, retried on 409.
import type { V1Secret } from '@kubernetes/client-node';
import { signingKeyFromBase64url, type SigningKey } from '@sbx/tokens';
import { providerUnavailable, sandboxNotFound } from '../provider.js';
import { isConflict, type KubeClient } from './kube-client.js';
import { sandboxResourceName } from './kube-names.js';
import { SECRET_KEY_FILE, SECRET_REVOCATIONS } from './pod-manifest.js';
import { recordFromSecret, type KubeSandboxRecord } from './sandbox-record.js';

const UPDATE_ATTEMPTS = 3;

const decode = (data: string | undefined): string | undefined =>
  data === undefined ? undefined : Buffer.from(data, 'base64').toString('utf8');
const encode = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

export interface SandboxSecret {
  readonly secret: V1Secret;
  readonly record: KubeSandboxRecord;
  readonly key: SigningKey;
}

export async function findSandboxSecret(
  client: KubeClient,
  sandboxId: string,
): Promise<SandboxSecret | undefined> {
  const name = sandboxResourceName(sandboxId);
  const { core, namespace, options } = client;
  const secret = await client.find('read secret', () =>
    core.readNamespacedSecret({ namespace, name }, options),
  );
  if (secret === undefined) return undefined;
  const record = recordFromSecret(secret);
  const keyText = decode(secret.data?.[SECRET_KEY_FILE]);
  // Same name, other writer (or another id hashing alike): not a sandbox of this provider's.
  if (record?.sandboxId !== sandboxId || keyText === undefined)
    throw providerUnavailable(`secret ${name} does not belong to sandbox ${sandboxId}`);
  return { secret, record, key: signingKeyFromBase64url(keyText) };
}

export async function existingSandboxSecret(client: KubeClient, sandboxId: string): Promise<SandboxSecret> {
  const found = await findSandboxSecret(client, sandboxId);
  if (found === undefined) throw sandboxNotFound(sandboxId);
  return found;
}

/** Replaces one key of the Secret's data with `change(current text)`; kubelet projects it into the pod. */
export async function updateSecretFile(
  client: KubeClient,
  sandboxId: string,
  file: string,
  change: (current: string | undefined) => string,
): Promise<void> {
  const { core, namespace, options } = client;
  for (let attempt = 1; ; attempt += 1) {
    const { secret } = await existingSandboxSecret(client, sandboxId);
    const name = secret.metadata?.name ?? sandboxResourceName(sandboxId);
    const body: V1Secret = {
      metadata: secret.metadata,
      type: secret.type,
      data: { ...secret.data, [file]: encode(change(decode(secret.data?.[file]))) },
    };
    try {
      await client.call('update secret', () =>
        core.replaceNamespacedSecret({ namespace, name, body }, options),
      );
      return;
    } catch (err) {
      if (!isConflict(err) || attempt >= UPDATE_ATTEMPTS) throw err;
    }
  }
}

export const REVOCATIONS_FILE = SECRET_REVOCATIONS;
export const KEY_FILE = SECRET_KEY_FILE;

import type Docker from 'dockerode';
import { SigningKey } from '@sbx/tokens';
import { providerUnavailable } from '../provider.js';
import { KEY_FILE_NAME } from './docker-names.js';
import type { SandboxContainers } from './docker-sandbox.js';
import { envValueOf } from './docker-state.js';
import { readRunFile } from './key-delivery.js';

/** What the broker's own health probe signs with: the sandbox's current key and issuer. */
export interface ProbeAccess {
  readonly key: SigningKey;
  readonly issuer: string;
}

/**
 * A broker that did not make the sandbox (it restarted) reads the key back from the sandbox's key
 * volume and the issuer from its environment: the engine, not the broker's memory, is the record.
 */
export async function recoverProbeAccess(
  sandboxId: string,
  containers: SandboxContainers,
  info: Docker.ContainerInspectInfo | undefined,
): Promise<ProbeAccess> {
  const issuer = info === undefined ? undefined : envValueOf(info, 'SANDBOX_TOKEN_ISSUER');
  const text = await readRunFile(containers.main, KEY_FILE_NAME, `read the key of sandbox ${sandboxId}`);
  if (issuer === undefined || text === undefined)
    throw providerUnavailable(`sandbox ${sandboxId} has no key or issuer the broker can probe it with`);
  try {
    return { key: SigningKey.fromBase64url(text), issuer };
  } catch (err) {
    throw providerUnavailable(`the key file of sandbox ${sandboxId} is not a key`, err);
  }
}

// Files the broker hands a sandbox (its key, the client's environment, the revocation list, the
// sidecar's token), written through the engine's archive endpoint into a per-sandbox volume.
// Why a volume: the root filesystem is read-only and the engine refuses archives there; a tmpfs is
// not seen by the archive endpoint and is empty again after a stop; a volume takes the archive
// whether the container runs or not, and keeps the key across stop and start (docs/provider-docker.md).
import path from 'node:path';
import type Docker from 'dockerode';
import type { SigningKey } from '@sbx/tokens';
import type { Revocation } from '../provider.js';
import { mergeRevocationList } from '../revocation-file.js';
import { engine, engineError, isNotFound } from './docker-engine.js';
import {
  AGENT_UID,
  KEY_FILE_NAME,
  REVOCATIONS_FILE_NAME,
  RUN_DIR,
  SANDBOX_ENV_FILE_NAME,
  SANDBOX_UID,
  SIDECAR_RUN_DIR,
  SIDECAR_TOKEN_FILE_NAME,
} from './docker-names.js';
import { packTar, unpackTar, type TarFile } from './tar-archive.js';

/**
 * Owned by root in a root-owned directory (the volume's root, NoCopy, 0755), `0440`: only the
 * group reads it, nobody can rewrite or replace it. The agent's own files (key, revocation list,
 * client environment) are group 1001's, the agent's real group (D22): the agent reads them as
 * itself, user code (uid and gid 1000, no other group) cannot read them at all.
 */
function ownFile(name: string, text: string, gid: number): TarFile {
  return { name, content: Buffer.from(text, 'utf8'), mode: 0o440, uid: 0, gid };
}

const agentFile = (name: string, text: string): TarFile => ownFile(name, text, AGENT_UID);

export function keyFile(key: SigningKey): TarFile {
  return agentFile(KEY_FILE_NAME, key.toBase64url());
}

/** `AGENT_SANDBOX_ENV_FILE`: always written, `{}` without a client policy row. */
export function sandboxEnvFile(environment: Readonly<Record<string, string>> | undefined): TarFile {
  return agentFile(SANDBOX_ENV_FILE_NAME, JSON.stringify(environment ?? {}));
}

/** In the sidecar's own volume, which the sandbox container never mounts; the sidecar runs as 1000. */
export function sidecarTokenFile(token: string): TarFile {
  return ownFile(SIDECAR_TOKEN_FILE_NAME, token, SANDBOX_UID);
}

export async function putFiles(
  container: Docker.Container,
  dir: string,
  files: readonly TarFile[],
  what: string,
): Promise<void> {
  await engine(what, () => container.putArchive(packTar(files), { path: dir }));
}

/**
 * Into the agent's key volume. A container made before the split identity (D22) runs its agent
 * as the user (`User` 1000:1000), which reads its files through group 1000: they keep going to
 * that group, or a revocation or rotation sent to it would never be read.
 */
export async function putRunFiles(
  container: Docker.Container,
  files: readonly TarFile[],
  what: string,
): Promise<void> {
  const user = await engine(what, async () => (await container.inspect()).Config.User);
  const legacy = user === `${SANDBOX_UID}:${SANDBOX_UID}`;
  const written = legacy
    ? files.map((file) => (file.gid === AGENT_UID ? { ...file, gid: SANDBOX_UID } : file))
    : files;
  await putFiles(container, RUN_DIR, written, what);
}

export const putSidecarFiles = (container: Docker.Container, files: readonly TarFile[], what: string) =>
  putFiles(container, SIDECAR_RUN_DIR, files, what);

async function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}

/** One file of the key directory; undefined when it does not exist (of a container that does). */
export async function readRunFile(
  container: Docker.Container,
  name: string,
  what: string,
): Promise<string | undefined> {
  try {
    const archive = await collect(await container.getArchive({ path: `${RUN_DIR}/${name}` }));
    return unpackTar(archive)
      .find((entry) => path.basename(entry.name) === name)
      ?.content.toString('utf8');
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw engineError(what, err);
  }
}

/** The revocation list with `revocation` merged in, by the providers' one merge (revocation-file.ts). */
export async function mergedRevocations(
  current: string | undefined,
  revocation: Revocation,
): Promise<TarFile> {
  return agentFile(REVOCATIONS_FILE_NAME, mergeRevocationList(current, revocation, Date.now()));
}

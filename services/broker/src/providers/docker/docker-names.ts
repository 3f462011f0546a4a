// What the provider calls things on the Docker engine: container and volume names derived from the
// sandbox id, the labels that say whose a container is, and the paths inside the containers.
import { createHash } from 'node:crypto';

export const LABELS = {
  sandboxId: 'sbx.dev/sandbox-id',
  tenantId: 'sbx.dev/tenant-id',
  managedBy: 'sbx.dev/managed-by',
  /** `agent` (the sandbox itself) or `sidecar` (the client's credential broker). */
  role: 'sbx.dev/role',
} as const;

export const MANAGED_BY = 'sbx-broker';

export type ContainerRole = 'agent' | 'sidecar';

/** Inside the sandbox container (the image contract, docs/provider-docker.md). */
export const WORKSPACE_DIR = '/workspace';
export const RUN_DIR = '/run/sbx';
export const KEY_FILE_NAME = 'agent.key';
export const REVOCATIONS_FILE_NAME = 'revocations.json';
export const SANDBOX_ENV_FILE_NAME = 'sandbox-env.json';
/** Inside the sidecar only: the user container never mounts it. */
export const SIDECAR_RUN_DIR = '/run/sbx-sidecar';
export const SIDECAR_TOKEN_FILE_NAME = 'token';

/**
 * The user's uid and gid (the image's `sandbox`): user code, the agent's effective ids, the
 * owner of /workspace, and what the sidecar runs as.
 */
export const SANDBOX_UID = 1000;
/**
 * The agent's own uid and gid (the image's `sbx-agent`), its real ids under the split identity
 * (D22). Its files in /run/sbx are readable by this group alone, so not by user code.
 */
export const AGENT_UID = 1001;
/**
 * The agent container starts as root, with only the capabilities the image's setpriv needs to
 * split the agent's identity; the kernel clears them as it does (docs/provider-docker.md).
 */
export const AGENT_CONTAINER_USER = '0:0';
export const AGENT_CONTAINER_CAPABILITIES: readonly string[] = ['SETUID', 'SETGID'];

export interface SandboxNames {
  readonly container: string;
  readonly sidecar: string;
  readonly workspaceVolume: string;
  readonly runVolume: string;
  readonly sidecarVolume: string;
}

/**
 * Docker names allow `[a-zA-Z0-9][a-zA-Z0-9_.-]*`, sandbox ids also `:` and a leading `_`/`-`:
 * the readable part is the id with other characters replaced, the hash keeps two ids that
 * differ only there apart. Lookups go by these names; labels say whose they are.
 */
export function sandboxNames(sandboxId: string): SandboxNames {
  const readable = sandboxId.replaceAll(/[^a-zA-Z0-9_.-]/g, '_').slice(0, 60);
  const hash = createHash('sha256').update(sandboxId).digest('hex').slice(0, 12);
  const base = `sbx-${readable}-${hash}`;
  return {
    container: base,
    sidecar: `${base}-sidecar`,
    workspaceVolume: `${base}-workspace`,
    runVolume: `${base}-run`,
    sidecarVolume: `${base}-sidecar-run`,
  };
}

export function sandboxLabels(
  sandboxId: string,
  tenantId: string,
  role: ContainerRole,
): Record<string, string> {
  return {
    [LABELS.sandboxId]: sandboxId,
    [LABELS.tenantId]: tenantId,
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.role]: role,
  };
}

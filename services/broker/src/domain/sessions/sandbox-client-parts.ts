// What a sandbox gets from the client that asked for it (sandboxd authentication
// seed, "The client_id claim"): its policy row's environment variables, and its
// credential-broker sidecar with a pod-scoped JWT. A request without a client, a
// client without a row, or a broker that cannot mint sidecar tokens: neither.
import type { SandboxSpec } from '../../providers/provider.js';
import type { SandboxRecord } from '../../store/sandbox-repository.js';
import type { ResolvedClientPolicy } from '../auth/client-policy.js';
import type { SidecarTokenMinter } from '../tokens/sidecar-tokens.js';

export function clientParts(
  minter: SidecarTokenMinter | undefined,
  sandbox: Pick<SandboxRecord, 'id' | 'tenantId' | 'hardExpiresAt'>,
  client: ResolvedClientPolicy | undefined,
): Pick<SandboxSpec, 'environment' | 'sidecar'> {
  if (client?.clientId === undefined) return {};
  const environment = Object.keys(client.sandboxEnv).length > 0 ? { environment: client.sandboxEnv } : {};
  if (client.sidecar === undefined || minter === undefined) return environment;
  const token = minter.mint({
    sandboxId: sandbox.id,
    tenantId: sandbox.tenantId,
    clientId: client.clientId,
    audience: client.sidecar.audience,
    scopes: client.sidecar.scopes,
    expiresAt: sandbox.hardExpiresAt,
  });
  return { ...environment, sidecar: { image: client.sidecar.image, token } };
}

// Broker instances cache each sandbox's decrypted key (KeyVault). A sandbox-wide
// revocation rotates the key on one instance; the others would go on minting with the
// old one, which the agent then refuses, until they restarted. The rotating instance
// announces the sandbox on a coordination channel and every instance forgets its copy,
// so its next token is signed with the stored, new key. An instance that lost its
// connection to the store may have missed announcements: once it is back it forgets
// every cached key (they are read again from the database as needed). Announcements
// made while the store is unreachable wait for it (resilient-coordination.ts).
import type { Logger } from '@sbx/service-kit';
import type { Coordination, Unsubscribe } from '../../adapters/redis/coordination.js';
import type { KeyVault } from './key-vault.js';

export const KEY_ROTATED_CHANNEL = 'sandbox-key-rotated';

export function announceKeyRotation(coordination: Pick<Coordination, 'publish'>) {
  return (sandboxId: string): Promise<void> => coordination.publish(KEY_ROTATED_CHANNEL, sandboxId);
}

export function forgetRotatedKeys(
  coordination: Pick<Coordination, 'subscribe'>,
  vault: Pick<KeyVault, 'forget' | 'forgetAll'>,
  logger: Logger,
): Promise<Unsubscribe> {
  return coordination.subscribe(
    KEY_ROTATED_CHANNEL,
    (sandboxId) => {
      vault.forget(sandboxId);
      logger.debug({ sandbox_id: sandboxId }, 'forgot a rotated sandbox key');
    },
    () => {
      vault.forgetAll();
      logger.info('forgot every cached sandbox key: key rotations may have been missed');
    },
  );
}

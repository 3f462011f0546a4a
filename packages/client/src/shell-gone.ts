import { WS_CLOSE_CODES } from '@sbx/protocol';
import { clientError, SbxClientError } from './errors.js';

/**
 * A shell that is gone when the client reconnects after a dropped connection ended while
 * the client was away: most often its sandbox's agent restarted after a crash (shells and
 * processes do not survive a restart, as on a rebooted machine), else it was closed. Said
 * so, with the close code 4404 (SHELL_NOT_FOUND), instead of a bare "no such shell session".
 */
export function shellGoneOnReconnect(err: unknown): unknown {
  if (!(err instanceof SbxClientError) || err.code !== 'NOT_FOUND') return err;
  return clientError(
    err.code,
    `${err.message}: it ended while its connection was down (its sandbox's agent restarted, ` +
      'which ends every shell and process, or the shell was closed); open a new shell',
    {
      cause: err,
      closeCode: WS_CLOSE_CODES.SHELL_NOT_FOUND,
      ...(err.details === undefined ? {} : { details: err.details }),
    },
  );
}

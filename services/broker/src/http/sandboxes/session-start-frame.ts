import { parseClientFrame, SbxError } from '@sbx/protocol';

/**
 * `WS /v1/sandboxes/{id}/sessions/{sid}` (docs/sandboxes.md): `new` leaves the caller's
 * `start` frame as it is (a new shell, or the one its `shell_session_id` names); any other
 * `sid` is the shell to re-attach to, so the broker writes it into the `start` frame and
 * refuses a first frame that is not a valid `start` (the shell endpoint's own schema) or
 * names another shell.
 */
export function sessionStartFrame(
  sid: string,
): ((data: Buffer, isBinary: boolean) => Buffer | SbxError) | undefined {
  if (sid === 'new') return undefined;
  return (data, isBinary) => {
    const parsed = isBinary ? undefined : parseClientFrame('shell', data.toString('utf8'));
    if (parsed?.ok !== true || parsed.frame.type !== 'start')
      return new SbxError(
        'BAD_REQUEST',
        `the first frame after auth must be a valid start to re-attach to ${sid}`,
      );
    const named = parsed.frame.shell_session_id;
    if (named !== undefined && named !== sid)
      return new SbxError('BAD_REQUEST', `the start frame names shell ${named}, but this session is ${sid}`);
    return Buffer.from(JSON.stringify({ ...parsed.frame, shell_session_id: sid }));
  };
}

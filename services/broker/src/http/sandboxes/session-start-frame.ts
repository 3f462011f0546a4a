/**
 * `WS /v1/sandboxes/{id}/sessions/{sid}` (docs/sandboxes.md): `new` leaves the caller's
 * `start` frame as it is (a new shell, or the one its `shell_session_id` names); any other
 * `sid` is the shell to re-attach to, so the broker writes it into the `start` frame and
 * refuses a first frame that is not a `start` or names another shell. The agent checks the
 * rest of the frame.
 */
export function sessionStartFrame(
  sid: string,
): ((data: Buffer, isBinary: boolean) => Buffer | { readonly refuse: string }) | undefined {
  if (sid === 'new') return undefined;
  return (data, isBinary) => {
    const frame = isBinary ? undefined : jsonObject(data);
    if (frame?.['type'] !== 'start')
      return { refuse: `the first frame after auth must be {"type":"start"} to re-attach to ${sid}` };
    const named = frame['shell_session_id'];
    if (named !== undefined && named !== sid)
      return { refuse: `the start frame names shell ${JSON.stringify(named)}, but this session is ${sid}` };
    return Buffer.from(JSON.stringify({ ...frame, shell_session_id: sid }));
  };
}

function jsonObject(data: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(data.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value))
      : undefined;
  } catch {
    return undefined;
  }
}

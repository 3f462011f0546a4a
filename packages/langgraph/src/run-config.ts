import { getConfig } from '@langchain/langgraph';
import { MvpSessionResponse } from '@sbx/protocol';

/** What a backend call needs from the LangGraph run it is part of. */
export interface RunTarget {
  /** `configurable.thread_id`, when the call runs inside a graph run that has one. */
  readonly threadId?: string;
  /** `configurable.sandbox`: a session negotiated before the run (MVP session response shape). */
  readonly session?: MvpSessionResponse;
}

/**
 * Reads the current run's config. Outside a run (a script calling the backend directly)
 * `getConfig()` has nothing to give, and that is not an error: the backend then uses its
 * fixed thread, if it has one.
 */
export function currentRunTarget(): RunTarget {
  let configurable: Record<string, unknown> | undefined;
  try {
    configurable = getConfig()?.configurable;
  } catch {
    return {};
  }
  if (configurable === undefined) return {};
  const threadId = configurable['thread_id'];
  const parsed = MvpSessionResponse.safeParse(configurable['sandbox']);
  return {
    ...(typeof threadId === 'string' && threadId !== '' ? { threadId } : {}),
    ...(parsed.success ? { session: parsed.data } : {}),
  };
}

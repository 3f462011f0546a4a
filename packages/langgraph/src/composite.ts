import { CompositeBackend, StateBackend } from 'deepagents';
import type { SbxSandbox } from './sandbox.js';

/**
 * Where deepagents keeps its own files: large tool results it evicts from the context and
 * the summaries of older conversation turns. Their paths lie at the sandbox's root, which
 * its user cannot write (read-only under bubblewrap: 403, `permission_denied`), and the
 * agent's bookkeeping has no place among the files the humans of the thread share; so they
 * go to LangGraph state (checkpointed with the thread) instead of the sandbox: a real run
 * never fails on them, and the sandbox holds only the work.
 */
export const STATE_ROUTES = ['/large_tool_results/', '/conversation_history/'] as const;

/**
 * The backend to give `createDeepAgent`: the sandbox for everything (files and `execute`),
 * except deepagents' own files (`STATE_ROUTES`), which go to LangGraph state.
 */
export function sandboxWithStateRoutes(sandbox: SbxSandbox): CompositeBackend {
  const state = new StateBackend();
  return new CompositeBackend(sandbox, Object.fromEntries(STATE_ROUTES.map((route) => [route, state])));
}

// How a route names the binding it acts on: by id (`/v1/sandbox/sessions/{id}`)
// or as "my binding on this thread" (`/threads/{thread_id}/sandbox…`). Another
// owner's binding is indistinguishable from a missing one (404, never 403).
import type { SessionBindingRecord, SessionBindingRepository } from '../../store/index.js';
import { assertOwns, type Principal } from '../auth/principal.js';
import { defaultActor } from './actor-resolution.js';
import { bindingConflict, bindingNotFound } from './session-errors.js';

export type BindingLocator =
  | { readonly kind: 'id'; readonly id: string }
  | {
      readonly kind: 'thread';
      readonly threadId: string;
      /** The sandbox the client believes it holds; another one is 409 BINDING_CONFLICT. */
      readonly sandboxId?: string | undefined;
    };

/** For audit rows of refusals: what the request named. */
export function locatorSubject(locator: BindingLocator): {
  sessionId?: string;
  scope?: { type: string; id: string };
} {
  return locator.kind === 'id'
    ? { sessionId: locator.id }
    : { scope: { type: 'thread', id: locator.threadId } };
}

/**
 * The binding the caller may act on. By id it may be released already (the
 * caller then learns SESSION_EXPIRED); on a thread only the live one counts.
 */
export async function locateBinding(
  bindings: SessionBindingRepository,
  principal: Principal,
  locator: BindingLocator,
): Promise<SessionBindingRecord> {
  if (locator.kind === 'id') {
    const binding = await bindings.findByIdAnyOwner(locator.id);
    assertOwns(principal, binding, 'BINDING_NOT_FOUND', `session ${locator.id} does not exist`);
    return binding;
  }
  const actor = defaultActor(principal);
  const binding = await bindings.findLive({
    tenantId: principal.tenantId,
    ownerId: principal.ownerId,
    scopeType: 'thread',
    scopeId: locator.threadId,
    actorType: actor.type,
    actorId: actor.id,
  });
  if (binding === null) throw bindingNotFound(`this caller holds no sandbox on thread ${locator.threadId}`);
  if (locator.sandboxId !== undefined && locator.sandboxId !== binding.sandboxId) {
    throw bindingConflict(`thread ${locator.threadId} is now served by another sandbox; negotiate again`);
  }
  return binding;
}

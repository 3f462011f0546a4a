// Who a session is for (the actor) and what the caller must hold to ask.
//
// Actor defaulting: a user acts as the human it is; a service or an agent
// principal acts as an agent of its own id.
// Naming another actor: services (server-side orchestrators such as the
// LangGraph server) and admins may name any actor, the way an E2B or Daytona
// API key creates sessions for whichever agent it runs. A user may name
// itself as human or any agent (its own CLI running an agent). An agent
// principal may only be itself: it cannot borrow a human's shell.
import { SbxError, type Actor, type NegotiateMode } from '@sbx/protocol';
import { hasCallerScope, isAdmin, type Principal } from '../auth/principal.js';

export function defaultActor(principal: Principal): Actor {
  return { type: principal.type === 'user' ? 'human' : 'agent', id: principal.id };
}

export function resolveActor(principal: Principal, requested: Actor | undefined): Actor {
  if (requested === undefined) return defaultActor(principal);
  if (isAdmin(principal) || principal.type === 'service') return requested;
  const self = defaultActor(principal);
  const allowed =
    principal.type === 'user'
      ? requested.type === 'agent' || requested.id === self.id
      : requested.type === self.type && requested.id === self.id;
  if (!allowed) {
    throw new SbxError('FORBIDDEN', `this caller may not act as ${requested.type} ${requested.id}`);
  }
  return requested;
}

/** Creating needs write:sandbox; attaching to what exists needs read:sandbox (or write). */
export function requireNegotiationScope(principal: Principal, mode: NegotiateMode): void {
  if (mode === 'attach_only') {
    requireHolderScope(principal);
    return;
  }
  if (!hasCallerScope(principal, 'write:sandbox')) {
    throw new SbxError('FORBIDDEN', `mode ${mode} may create a sandbox and requires the write:sandbox scope`);
  }
}

/** Inspecting, refreshing, heartbeating or releasing one's session: read:sandbox or write:sandbox. */
export function requireHolderScope(principal: Principal): void {
  if (!hasCallerScope(principal, 'read:sandbox') && !hasCallerScope(principal, 'write:sandbox')) {
    throw new SbxError('FORBIDDEN', 'this operation requires the read:sandbox or write:sandbox scope');
  }
}

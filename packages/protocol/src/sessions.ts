import { z } from 'zod';
import { Id, ProviderName } from './primitives.js';
import { CapabilityList, type CapabilityScope } from './scopes.js';

/**
 * Session negotiation request of `POST /v1/sandbox/sessions` (docs/protocol.md#route-families).
 *
 * ONE schema accepts both shapes:
 * - MVP:  `{ thread_id, mode: 'get' | 'ensure' }`
 * - full: `{ scope: {type, id}, mode, actor?, requested_capabilities?, sandbox_hint?, provider_preference? }`
 * Every field the full shape adds is optional (docs/protocol.md#compatibility-rules), so any mix of the
 * two parses, and `NegotiateSessionRequest` transforms it into one `NegotiateRequest`.
 *
 * Decisions:
 * - `thread_id` alone means `scope: {type:'thread', id: thread_id}`. Giving both is
 *   allowed only when they name the same thread; otherwise the body is rejected.
 * - All four modes are accepted in either shape: a mode says what to do, the scope
 *   says where, and the two are orthogonal. `get` (MVP) and `attach_only` (full) mean
 *   the same thing and are normalized to `attach_only`.
 * - Capabilities may use the alias names (`fs_read`, `fs_write`, `exec`, `shell`; docs/protocol.md#aliases)
 *   or the canonical scopes; they are normalized, de-duplicated and ordered. An unknown
 *   name is rejected with a message naming it. Omitting the list asks for the policy
 *   default; an empty list is rejected (it would mint a token that can do nothing).
 * - Request bodies are strict: an unknown key (a typo such as `requested_capabilites`)
 *   is a 400, not silently ignored.
 */

export const SCOPE_TYPES = ['thread', 'workspace', 'assistant', 'deployment'] as const;
export const ScopeType = z.enum(SCOPE_TYPES);
export type ScopeType = z.infer<typeof ScopeType>;

export const Scope = z.strictObject({ type: ScopeType, id: Id });
export type Scope = z.infer<typeof Scope>;

export const ACTOR_TYPES = ['human', 'agent'] as const;
export const ActorType = z.enum(ACTOR_TYPES);
export type ActorType = z.infer<typeof ActorType>;

export const Actor = z.strictObject({ type: ActorType, id: Id });
export type Actor = z.infer<typeof Actor>;

/** Modes of the MVP (`get`, `ensure`) and the full protocol (`ensure`, `attach_only`, `create_only`). */
export const NEGOTIATE_MODES = ['get', 'ensure', 'attach_only', 'create_only'] as const;
export const NegotiateModeInput = z.enum(NEGOTIATE_MODES);
export type NegotiateModeInput = z.infer<typeof NegotiateModeInput>;

/** The normalized mode: `get` is `attach_only`. */
export const NegotiateMode = z.enum(['ensure', 'attach_only', 'create_only']);
export type NegotiateMode = z.infer<typeof NegotiateMode>;

export function normalizeMode(mode: NegotiateModeInput): NegotiateMode {
  return mode === 'get' ? 'attach_only' : mode;
}

/** `auto` lets the broker choose; otherwise a provider name. */
export const ProviderPreference = z.union([z.literal('auto'), ProviderName]);
export type ProviderPreference = z.infer<typeof ProviderPreference>;

/** The MVP request alone (documentation and SDK typing; the broker parses NegotiateSessionRequest). */
export const MvpNegotiateBody = z.strictObject({
  thread_id: Id,
  mode: z.enum(['get', 'ensure']),
});
export type MvpNegotiateBody = z.infer<typeof MvpNegotiateBody>;

const fullFields = {
  mode: NegotiateModeInput,
  actor: Actor.optional(),
  requested_capabilities: CapabilityList.optional(),
  sandbox_hint: Id.optional().describe('An existing sandbox id the client would like to resume'),
  provider_preference: ProviderPreference.default('auto'),
};

/** The full request alone (documentation and SDK typing). */
export const FullNegotiateBody = z.strictObject({ scope: Scope, ...fullFields });
export type FullNegotiateBodyInput = z.input<typeof FullNegotiateBody>;

/** Normalized negotiation request the broker works with. */
export interface NegotiateRequest {
  readonly scope: Scope;
  readonly mode: NegotiateMode;
  /** Absent: the broker derives the actor from the authenticated principal. */
  readonly actor?: Actor;
  /** Absent: the policy default. Canonical, de-duplicated, ordered. */
  readonly requested_capabilities?: CapabilityScope[];
  readonly sandbox_hint?: string;
  readonly provider_preference: ProviderPreference;
  /** Whether the client spoke the MVP shape (sent `thread_id`); for metrics and deprecation only. */
  readonly mvp: boolean;
}

/** The one schema for `POST /v1/sandbox/sessions` bodies, MVP or full; output is `NegotiateRequest`. */
export const NegotiateSessionRequest = z
  .strictObject({
    thread_id: Id.optional().describe('MVP: shorthand for scope {type:"thread", id}'),
    scope: Scope.optional(),
    ...fullFields,
  })
  .superRefine((body, ctx) => {
    if (body.thread_id === undefined && body.scope === undefined) {
      ctx.addIssue({ code: 'custom', path: ['scope'], message: 'either thread_id or scope is required' });
      return;
    }
    if (body.thread_id !== undefined && body.scope !== undefined) {
      if (body.scope.type !== 'thread') {
        ctx.addIssue({
          code: 'custom',
          path: ['scope', 'type'],
          message: `thread_id means a thread scope but scope.type is "${body.scope.type}"`,
        });
      } else if (body.scope.id !== body.thread_id) {
        ctx.addIssue({
          code: 'custom',
          path: ['scope', 'id'],
          message: `thread_id "${body.thread_id}" and scope.id "${body.scope.id}" name different threads`,
        });
      }
    }
  })
  .transform((body): NegotiateRequest => {
    // superRefine guarantees one of the two is present.
    const scope: Scope = body.scope ?? { type: 'thread', id: body.thread_id ?? '' };
    return {
      scope,
      mode: normalizeMode(body.mode),
      ...(body.actor === undefined ? {} : { actor: body.actor }),
      ...(body.requested_capabilities === undefined
        ? {}
        : { requested_capabilities: body.requested_capabilities }),
      ...(body.sandbox_hint === undefined ? {} : { sandbox_hint: body.sandbox_hint }),
      provider_preference: body.provider_preference,
      mvp: body.thread_id !== undefined,
    };
  });
/** What a client may send (either shape). */
export type NegotiateSessionRequestInput = z.input<typeof NegotiateSessionRequest>;

/** Path parameters of `/v1/sandbox/sessions/{id}…`; `session_id` and `binding_id` are the same id. */
export const SessionPathParams = z.strictObject({ session_id: Id });
export type SessionPathParams = z.infer<typeof SessionPathParams>;

/**
 * Body of MVP `POST …/{session_id}/refresh` and full `POST …/{binding_id}/refresh-token`:
 * `{}` (MVP clients send nothing else), or `requested_capabilities` to have this one token
 * carry less than the binding holds (least privilege: a `shell:ro` token to watch a shell
 * from a binding that may type into it). More than the binding holds is 403 CAPABILITY_DENIED.
 */
export const RefreshTokenRequest = z.strictObject({ requested_capabilities: CapabilityList.optional() });
export type RefreshTokenRequest = z.infer<typeof RefreshTokenRequest>;
export type RefreshTokenRequestInput = z.input<typeof RefreshTokenRequest>;

/** Body of `…/heartbeat`: `{}`. */
export const EmptyBody = z.strictObject({});
export type EmptyBody = z.infer<typeof EmptyBody>;

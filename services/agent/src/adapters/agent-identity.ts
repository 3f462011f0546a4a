// Who the agent is. On the local provider it is the sandbox's own user, in the sandbox's
// view (D21). In a container it cannot be outside the sandbox, so it is split (D22): its
// real uid and gid are its own (the image's `sbx-agent`), its effective ones the user's. The
// kernel then checks files as the user (the file API can do nothing user code cannot), while
// user code, sharing no real, effective and saved uid with it, can neither trace it nor read
// its memory or environment (a process whose ids differ is not dumpable), nor read its key,
// which only the agent's own group may read.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface UnixUser {
  readonly uid: number;
  readonly gid: number;
}

export interface AgentIdentity {
  /** Whom user processes run as: the agent's effective identity. */
  readonly user: UnixUser;
  /** The agent's own, when it differs from the user's (a split identity); else undefined. */
  readonly own: UnixUser | undefined;
}

/** Reads one of the agent's own files (its key, revocation list, client variables). */
export type OwnFileReader = (file: string) => string;

export function currentIdentity(): AgentIdentity {
  const user = { uid: process.geteuid?.() ?? 0, gid: process.getegid?.() ?? 0 };
  const own = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  return { user, own: own.uid === user.uid && own.gid === user.gid ? undefined : own };
}

const CAT = '/bin/cat';
const MAX_OWN_FILE_BYTES = 1024 * 1024;

/**
 * A split agent reads its own files through a child that takes back the agent's real ids
 * (no privilege needed: they are its real ones): the agent itself, checked as the user,
 * cannot, and neither can the file API. Only on change, so the spawn costs little.
 */
export function ownFileReader(identity: AgentIdentity): OwnFileReader {
  const own = identity.own;
  if (own === undefined) return (file) => readFileSync(file, 'utf8');
  return (file) =>
    execFileSync(CAT, ['--', file], {
      uid: own.uid,
      gid: own.gid,
      encoding: 'utf8',
      env: {},
      maxBuffer: MAX_OWN_FILE_BYTES,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
}

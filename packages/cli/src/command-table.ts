import type { CliContext } from './context.js';

export type Command = (ctx: CliContext, args: readonly string[]) => Promise<number>;

/**
 * Every command, by name, as a loader of its module. The imports are dynamic so that the
 * bundle (scripts/build-cli.mjs) splits each command into its own chunk: an invocation
 * loads only the command it runs and what that command imports (`sbx mcp` alone loads the
 * MCP SDK; commands that never open a WebSocket never load ws).
 */
export const COMMANDS: Readonly<Record<string, () => Promise<Command>>> = {
  login: async () => (await import('./commands/login.js')).login,
  logout: async () => (await import('./commands/logout.js')).logout,
  whoami: async () => (await import('./commands/whoami.js')).whoami,
  ensure: async () => (await import('./commands/ensure.js')).ensure,
  sessions: async () => (await import('./commands/sessions.js')).sessions,
  release: async () => (await import('./commands/release.js')).release,
  exec: async () => (await import('./commands/exec.js')).exec,
  cat: async () => (await import('./commands/cat.js')).cat,
  ls: async () => (await import('./commands/ls.js')).ls,
  rm: async () => (await import('./commands/rm.js')).rm,
  cp: async () => (await import('./commands/cp.js')).cp,
  sync: async () => (await import('./commands/sync.js')).sync,
  shell: async () => (await import('./commands/shell.js')).shell,
  doctor: async () => (await import('./commands/doctor.js')).doctor,
  mcp: async () => (await import('./commands/mcp.js')).mcp,
  help: async () => (await import('./commands/help.js')).help,
};

export const isHelp = (arg: string): boolean => arg === 'help' || arg === '--help' || arg === '-h';

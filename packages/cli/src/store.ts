import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from './exit-codes.js';

/** `config.json`: who to talk to, and the secret to say it with (0600 in a 0700 directory). */
export type CliConfig = ApiKeyConfig | DeviceLoginConfig;

interface LoginCommon {
  readonly broker_url: string;
  /** The id the CLI's human (and agent, `<id>.cli`) bindings are named by. */
  readonly actor_id: string;
}

/** `sbx login --api-key`: the key is the bearer. */
export interface ApiKeyConfig extends LoginCommon {
  readonly api_key: string;
}

/** `sbx login --device` (RFC 8628): an OIDC access token, refreshed before it expires. */
export interface DeviceLoginConfig extends LoginCommon {
  readonly oidc: OidcTokens;
}

export interface OidcTokens {
  readonly issuer: string;
  readonly token_endpoint: string;
  readonly client_id: string;
  readonly access_token: string;
  /** Absent when the issuer granted none: the login then ends with the access token. */
  readonly refresh_token?: string;
  /** ISO time; absent when the issuer said nothing and the token is not a JWT with `exp`. */
  readonly expires_at?: string;
  readonly scope?: string;
}

export const isDeviceLogin = (config: CliConfig): config is DeviceLoginConfig => 'oidc' in config;

export type BindingRole = 'human' | 'agent' | 'observer';
export const BINDING_ROLES: readonly BindingRole[] = ['human', 'agent', 'observer'];

export interface CachedBinding {
  readonly session_id: string;
  readonly token: string;
  readonly expires_at: string;
}

/** What the CLI remembers of a thread's sandbox, so a later invocation skips negotiation. */
export interface CachedThread {
  readonly sandbox_id: string;
  readonly http_base_url: string;
  readonly ws_base_url: string;
  /**
   * Where the sandbox's processes see their workspace (`/workspace` under bubblewrap), from
   * the negotiation answer. Absent in caches written before it existed: asked of the agent.
   */
  readonly workspace_path?: string;
  readonly bindings: Partial<Record<BindingRole, CachedBinding>>;
}

export type ThreadCache = Record<string, CachedThread>;

/** The files under `$SBX_HOME`; every write is atomic (temp file + rename) and 0600. */
export class CliStore {
  constructor(readonly home: string) {}

  get configPath(): string {
    return path.join(this.home, 'config.json');
  }

  get threadsPath(): string {
    return path.join(this.home, 'threads.json');
  }

  readConfig(): CliConfig | undefined {
    return this.#readJson<CliConfig>(this.configPath);
  }

  writeConfig(config: CliConfig): void {
    this.#writeJson(this.configPath, config);
  }

  readThreads(): ThreadCache {
    return this.#readJson<ThreadCache>(this.threadsPath) ?? {};
  }

  writeThreads(threads: ThreadCache): void {
    this.#writeJson(this.threadsPath, threads);
  }

  /** Applies `change` to the cached entry of `thread` (undefined removes it). */
  updateThread(thread: string, change: (entry: CachedThread | undefined) => CachedThread | undefined): void {
    const threads = this.readThreads();
    const next = change(threads[thread]);
    if (next === undefined) delete threads[thread];
    else threads[thread] = next;
    this.writeThreads(threads);
  }

  /** Forgets the login and every cached token. */
  clear(): void {
    rmSync(this.configPath, { force: true });
    rmSync(this.threadsPath, { force: true });
  }

  // oxlint-disable-next-line typescript/no-unnecessary-type-parameters -- T is the file's shape, which this module alone writes
  #readJson<T>(file: string): T | undefined {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      // Not `instanceof Error`: fs errors may come from another realm (a test's vm context).
      if (typeof err === 'object' && err !== null && 'code' in err && err.code === 'ENOENT') return undefined;
      throw err;
    }
    try {
      // oxlint-disable-next-line typescript/no-unsafe-type-assertion -- written by #writeJson only; a hand-edited file fails below
      return JSON.parse(text) as T;
    } catch {
      throw new UsageError(`${file} is not valid JSON; fix or delete it`);
    }
  }

  #writeJson(file: string, value: unknown): void {
    mkdirSync(this.home, { recursive: true, mode: 0o700 });
    chmodSync(this.home, 0o700);
    const temp = `${file}.${process.pid}.tmp`;
    writeFileSync(temp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
    chmodSync(temp, 0o600);
    renameSync(temp, file);
  }
}

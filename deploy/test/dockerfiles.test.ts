// What the two images promise an operator, read off their Dockerfiles (no engine runs here):
// tini as PID 1, a health check, pinned bases, no secrets baked in; the broker non-root; for the
// agent image also the contract of docs/deploy.md (started as root, the agent's identity split
// at once by setpriv: real 1001, effective 1000 (D22); /workspace volume, python3 and node).
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  envOf,
  finalStage,
  instructions,
  lastInstruction,
  parseDockerfile,
  readDockerfile,
  type Dockerfile,
} from './dockerfile.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOCKER_DIR = path.join(ROOT, 'deploy', 'docker');
const IMAGES = ['broker', 'agent'] as const;
const PNPM = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { packageManager: string })
  .packageManager;

const dockerfileOf = (image: (typeof IMAGES)[number]): Dockerfile =>
  readDockerfile(path.join(DOCKER_DIR, `${image}.Dockerfile`));

const SECRET_NAME = /KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|PRIVATE/i;
/** What the agent image runs before tini: real ids `sbx-agent`, effective ids `sandbox`, no groups. */
// prettier-ignore
const AGENT_SPLIT = [
  '/usr/bin/setpriv', '--ruid', '1001', '--euid', '1000', '--rgid', '1001', '--egid', '1000', '--clear-groups', '--',
];
const BEFORE_TINI = { broker: [], agent: AGENT_SPLIT };

describe('the Dockerfile reader', () => {
  it('joins continuations, reads flags and the exec form, and splits stages', () => {
    const parsed = parseDockerfile(
      [
        '# syntax=docker/dockerfile:1',
        'ARG BASE=node:20',
        'FROM node:20-bookworm-slim AS build',
        'RUN apt-get update \\',
        '  # a comment inside a continuation',
        ' && apt-get install -y tini',
        'FROM debian:bookworm-slim',
        'HEALTHCHECK --interval=5s --retries=3 CMD ["node", "-e", "1"]',
        'ENV A=1 B="two words" \\',
        '    C=3',
      ].join('\n'),
    );
    expect(parsed.globalArgs.map((arg) => arg.args)).toEqual(['BASE=node:20']);
    expect(parsed.stages.map((stage) => [stage.image, stage.name])).toEqual([
      ['node:20-bookworm-slim', 'build'],
      ['debian:bookworm-slim', undefined],
    ]);
    expect(parsed.stages[0]?.instructions[0]?.args).toBe('apt-get update && apt-get install -y tini');
    const check = lastInstruction(finalStage(parsed), 'HEALTHCHECK');
    expect(check?.flags).toEqual({ interval: '5s', retries: '3' });
    expect(check?.args).toBe('CMD ["node", "-e", "1"]');
    expect(Object.fromEntries(envOf(finalStage(parsed)))).toEqual({ A: '1', B: 'two words', C: '3' });
  });

  it('refuses an instruction before FROM and a continuation that never ends', () => {
    expect(() => parseDockerfile('RUN true\nFROM x:1')).toThrow(/before FROM/);
    expect(() => parseDockerfile('FROM x:1\nRUN true \\')).toThrow(/never ends/);
  });
});

describe.each(IMAGES)('the %s image', (image) => {
  const dockerfile = dockerfileOf(image);
  const last = finalStage(dockerfile);
  const stageNames = new Set(dockerfile.stages.map((stage) => stage.name));

  it('is multi-stage, every base image pinned to a tag other than latest', () => {
    expect(dockerfile.stages.length).toBeGreaterThanOrEqual(2);
    for (const { image: base } of dockerfile.stages) {
      if (stageNames.has(base)) continue;
      expect(base).toMatch(/^[\w./-]+(:[\w.-]+)(@sha256:[0-9a-f]{64})?$|@sha256:[0-9a-f]{64}$/);
      expect(base).not.toMatch(/:latest\b/);
    }
  });

  it('runs under tini as PID 1 (the agent image: after setpriv, which execs it)', () => {
    const entrypoint = lastInstruction(last, 'ENTRYPOINT')?.exec ?? [];
    const tini = entrypoint.indexOf('/usr/bin/tini');
    expect(entrypoint.slice(0, tini)).toEqual(BEFORE_TINI[image]);
    expect(entrypoint.slice(tini, tini + 2)).toEqual(['/usr/bin/tini', '--']);
    expect(instructions(last, 'RUN').some((run) => /apt-get install[^&]*\btini\b/.test(run.args))).toBe(true);
  });

  it('has a health check against /healthz made with node (slim images have no curl)', () => {
    const check = lastInstruction(last, 'HEALTHCHECK');
    expect(check?.args).toMatch(/^CMD /);
    const command = JSON.parse(check?.args.slice('CMD '.length) ?? '[]') as string[];
    const node = command.indexOf('node');
    expect(command.slice(node, node + 2)).toEqual(['node', '-e']);
    expect(command[node + 2]).toMatch(/fetch\(.*\/healthz/);
    expect(check?.flags['interval']).toBeDefined();
  });

  it('bakes no secret into ENV or ARG of any stage (secrets only as file paths)', () => {
    const env = dockerfile.stages.flatMap((stage) => [...envOf(stage)]);
    const secretValues = env.filter(
      ([name, value]) => SECRET_NAME.test(name) && !(name.endsWith('_FILE') && value.startsWith('/')),
    );
    expect(secretValues).toEqual([]);
    expect(env.filter(([, value]) => /:\/\/[^/\s]*:[^/\s]*@/.test(value))).toEqual([]); // no URL with a password
    expect(env.map(([name]) => name)).toContain('PORT'); // the reader did read the ENV lines
    const args = [...dockerfile.globalArgs, ...dockerfile.stages.flatMap((s) => instructions(s, 'ARG'))];
    for (const { args: declaration } of args) expect(declaration).not.toMatch(SECRET_NAME);
  });

  it(`installs the workspace with ${PNPM} from the frozen lockfile`, () => {
    const runs = dockerfile.stages.flatMap((stage) => instructions(stage, 'RUN'));
    const installs = runs.filter((run) => /\bpnpm\b/.test(run.args)).map((run) => run.args);
    expect(installs).toEqual([`npx -y ${PNPM} install --frozen-lockfile`]);
  });

  it('copies the builder output as root-owned files (the process cannot rewrite its own code)', () => {
    const copies = instructions(last, 'COPY').filter((copy) => copy.flags['from'] !== undefined);
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) {
      expect(stageNames.has(copy.flags['from'])).toBe(true);
      expect(copy.flags['chown']).toBe('root:root');
    }
  });
});

describe('the agent image', () => {
  const dockerfile = dockerfileOf('agent');
  const last = finalStage(dockerfile);

  it("starts as root only to split the agent's identity at once, for every capability to go", () => {
    // Root, for setpriv; the providers grant it CAP_SETUID and CAP_SETGID alone.
    expect(lastInstruction(last, 'USER')?.args).toBe('0:0');
    const entrypoint = lastInstruction(last, 'ENTRYPOINT')?.exec;
    expect(entrypoint).toEqual([...AGENT_SPLIT, '/usr/bin/tini', '--', 'node', '/opt/sbx/agent/main.mjs']);
    const runs = instructions(last, 'RUN').map((run) => run.args);
    // setpriv is util-linux's (essential in Debian); the build checks it is there.
    expect(runs.some((run) => run.includes('test -x /usr/bin/setpriv'))).toBe(true);
    // The health check runs as the container's user (root) unless it drops that first.
    const check = JSON.parse(
      lastInstruction(last, 'HEALTHCHECK')?.args.slice('CMD '.length) ?? '[]',
    ) as string[];
    // prettier-ignore
    expect(check.slice(0, check.indexOf('node'))).toEqual([
      '/usr/bin/setpriv', '--reuid', '65534', '--regid', '65534', '--clear-groups', '--',
    ]);
  });

  it('has the sandbox user 1000:1000, whose home is the /workspace volume, and the agent 1001:1001', () => {
    const runs = instructions(last, 'RUN').map((run) => run.args);
    expect(
      runs.some((run) => /useradd --uid 1000 --gid 1000 --home-dir \/workspace [^&]*\bsandbox\b/.test(run)),
    ).toBe(true);
    // The agent's own identity: no home, no shell.
    expect(
      runs.some(
        (run) =>
          run.includes('groupadd --gid 1001 sbx-agent') &&
          /useradd --uid 1001 --gid 1001 --home-dir \/nonexistent --no-create-home --shell \/usr\/sbin\/nologin sbx-agent/.test(
            run,
          ),
      ),
    ).toBe(true);
    // node:*-slim already has uid 1000 as `node`; it must go before `sandbox` can take it.
    expect(runs.some((run) => run.includes('userdel --remove node'))).toBe(true);
    // A named volume copies this directory's owner: the user's.
    expect(runs.some((run) => run.includes('chown 1000:1000 /workspace '))).toBe(true);
    expect(lastInstruction(last, 'VOLUME')?.exec ?? lastInstruction(last, 'VOLUME')?.args).toEqual([
      '/workspace',
    ]);
    expect(lastInstruction(last, 'WORKDIR')?.args).toBe('/workspace');
  });

  it('has python3 and node for execute_code in the final stage', () => {
    expect(last.image).toMatch(/^node:20[\w.-]*-slim$/);
    const installs = instructions(last, 'RUN').filter((run) => run.args.includes('apt-get install'));
    expect(installs.some((run) => /\bpython3\b/.test(run.args))).toBe(true);
  });

  it('runs the bundle that scripts/build-agent.mjs wrote in the build stage', () => {
    const entrypoint = lastInstruction(last, 'ENTRYPOINT')?.exec;
    expect(entrypoint?.slice(-2)).toEqual(['node', '/opt/sbx/agent/main.mjs']);
    const build = dockerfile.stages.find((stage) => stage.name === 'build');
    expect(instructions(build!, 'RUN').map((run) => run.args)).toContain(
      'node scripts/build-agent.mjs /opt/sbx/agent',
    );
    const copy = instructions(last, 'COPY').find((c) => c.flags['from'] === 'build');
    expect(copy?.args).toBe('/opt/sbx/agent /opt/sbx/agent');
  });

  it('sets the agent contract environment, the key as a file under /run/sbx', () => {
    const env = envOf(last);
    expect(Object.fromEntries(env)).toMatchObject({
      WORKSPACE_ROOT: '/workspace',
      HOME: '/workspace',
      HOST: '0.0.0.0',
      PORT: '8080',
      AGENT_LAUNCHER: 'direct',
      SANDBOX_SIGNING_KEY_FILE: '/run/sbx/agent.key',
    });
    expect(env.has('SANDBOX_SIGNING_KEY')).toBe(false);
    expect(lastInstruction(last, 'EXPOSE')?.args).toBe('8080');
    // /run/sbx is root's, 0755: the user traverses it; what lies there only group 1001 reads.
    const runs = instructions(last, 'RUN').map((run) => run.args);
    expect(
      runs.some((run) => run.includes('chown 0:0 /run/sbx') && run.includes('chmod 0755 /run/sbx')),
    ).toBe(true);
    expect(runs.some((run) => /chown 1000[^&]*\/run\/sbx/.test(run))).toBe(false);
  });
});

describe('the broker image', () => {
  const dockerfile = dockerfileOf('broker');
  const last = finalStage(dockerfile);

  // The agent image starts as root instead, for setpriv alone (see above).
  it('runs as a non-root user in the final stage', () => {
    const user = lastInstruction(last, 'USER')?.args;
    expect(user).toBeDefined();
    const [uid] = (user ?? '').split(':');
    expect(uid).toMatch(/^\d+$/); // numeric, so Kubernetes can verify runAsNonRoot
    expect(Number(uid)).toBeGreaterThan(0);
  });

  it('listens on all interfaces at PORT (the broker defaults to loopback)', () => {
    const env = envOf(last);
    expect(env.get('HOST')).toBe('0.0.0.0');
    expect(lastInstruction(last, 'EXPOSE')?.args).toBe(env.get('PORT'));
    expect(env.get('BROKER_DATA_DIR')).toBe('/var/lib/sbx-broker');
  });

  it('runs the bundle scripts/build-broker.mjs wrote in the build stage with plain node, no tsx', () => {
    const build = dockerfile.stages.find((stage) => stage.name === 'build');
    const runs = instructions(build!, 'RUN').map((run) => run.args);
    const install = runs.findIndex((run) => run.includes('install --frozen-lockfile'));
    expect(runs.indexOf('node scripts/build-broker.mjs')).toBeGreaterThan(install);
    const command = lastInstruction(last, 'CMD')?.exec ?? [];
    expect(command[0]).toBe('node');
    expect(command.at(-1)).toBe('services/broker/dist/main.mjs');
    expect(command).not.toContain('tsx');
  });

  // docs/deploy.md "Broker image": what keeps relayed downloads cheap, wherever the broker runs.
  it("runs node and glibc's malloc as `pnpm start` does: the relay's memory settings", () => {
    const start = (
      JSON.parse(readFileSync(path.join(ROOT, 'services', 'broker', 'package.json'), 'utf8')) as {
        scripts: { start: string };
      }
    ).scripts.start;
    const tunables = [...envOf(last)].filter(([name]) => name.startsWith('MALLOC_'));
    expect(tunables.map(([name]) => name).toSorted()).toEqual(['MALLOC_TOP_PAD_', 'MALLOC_TRIM_THRESHOLD_']);
    for (const [, value] of tunables) expect(Number(value)).toBeGreaterThanOrEqual(16 * 1024 * 1024);
    for (const [name, value] of tunables) expect(start).toContain(`${name}=${value} `);
    const nodeFlags = (lastInstruction(last, 'CMD')?.exec ?? []).slice(1, -1).join(' ');
    expect(start).toContain(`node ${nodeFlags} dist/main.mjs`);
    expect(start.startsWith('node ../../scripts/build-broker.mjs && ')).toBe(true);
  });
});

describe('the build context (.dockerignore)', () => {
  const ignored = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));

  it('keeps local state, installed modules and secrets out of the images', () => {
    expect(ignored).toEqual(
      expect.arrayContaining(['.git', '**/node_modules', '.data', '**/.env', '**/*.key', '**/*.pem']),
    );
    expect(ignored.some((line) => line.startsWith('!'))).toBe(false);
  });
});

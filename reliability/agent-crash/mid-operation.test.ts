// kill -9 of a sandbox's agent in the middle of what its clients do, through the SDK: an
// interactive shell, an upload, a background process. Every file written whole before the
// crash is intact (hashed before and after), a partial upload never appears under its name
// and its temporary is gone after the restart, the client gets a clear error, then the
// SDK's retries ride out the restart (the agent comes back at the same address).
// Bounded: one crash per operation; long (SBX_RELIABILITY=long): 4 per operation.
import { randomBytes, randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from '@jest/globals';
import { WS_CLOSE_CODES } from '../../packages/protocol/src/index.js';
import {
  BackendUnavailableError,
  NotFoundError,
  type BrokerClient,
  type Shell,
} from '../../packages/client/src/index.js';
import { rejectionOf } from '../../packages/client/test/wait-for.js';
import { until } from '../../services/broker/test/support/until.js';
import {
  clientOf,
  describeOnPostgres,
  hostWorkspace,
  killAgent,
  LONG,
  restarted,
  RIDE_OUT_RESTARTS,
  sessionOn,
  sha256,
  treeHashes,
  uploadTemporaries,
  useCrashBroker,
} from './crash-kit.js';

const ROUNDS = LONG ? 4 : 1;

/** What the background process writes into its file `i` of `round`. */
const expected = (round: number, i: number) => sha256(`line ${round}.${i}\n`.repeat(4000));
const CEILING_MS = 120_000;

describeOnPostgres('agent crash in the middle of an operation', () => {
  // Each operation's rounds on one sandbox: no crash loop.
  const broker = useCrashBroker({ maxCrashes: ROUNDS + 2 });
  let client: BrokerClient;

  beforeAll(async () => {
    client = await clientOf(broker);
  });

  it('ends a shell with a clear error, keeps what it wrote, and a new shell works', async () => {
    const thread = `thr_shell_${randomUUID()}`;
    const session = await sessionOn(client, thread, 'human');
    const sandboxId = session.response.sandbox.id;
    const sandbox = session.sandbox({ retry: RIDE_OUT_RESTARTS });
    const workspace = hostWorkspace(broker.dataDir(), sandboxId);
    for (let round = 1; round <= ROUNDS; round++) {
      const shell: Shell = await sandbox.openShell();
      let output = '';
      shell.onData((data) => (output += data.toString('utf8')));
      shell.write(`head -c 1000000 /dev/urandom > shell-${round}.bin && echo written-${round}\n`);
      shell.write(`while :; do echo tick-${round}; sleep 0.1; done\n`);
      // A line of its own: the terminal echoes the typed loop, `tick-N` included, at once.
      await until(() => new RegExp(`\ntick-${round}\r?\n`).test(output), 'the shell to run');
      const before = treeHashes(workspace);
      expect(before.has(`shell-${round}.bin`)).toBe(true);

      const killed = killAgent(broker, sandboxId);
      const error = await rejectionOf(shell.exited, 'the shell', CEILING_MS);
      await restarted(broker, sandboxId, killed);
      // The shell died with its agent: its reconnect is told so, by name, and not retried forever.
      expect(error).toBeInstanceOf(NotFoundError);
      expect(error.message).toContain(`shell ${shell.id}: no such shell session: it ended while its`);
      expect(error.message).toContain("its sandbox's agent restarted");
      expect(error).toMatchObject({ closeCode: WS_CLOSE_CODES.SHELL_NOT_FOUND });
      expect(treeHashes(workspace)).toEqual(before);

      const next = await sandbox.openShell();
      let seen = '';
      next.onData((data) => (seen += data.toString('utf8')));
      next.write(`sha256sum shell-${round}.bin; exit\n`);
      await next.exited;
      expect(seen).toContain(before.get(`shell-${round}.bin`)!.split(' ').at(-1)!);
    }
    await session.release();
  }, 600_000);

  it('never shows a partial upload under its name, removes its temporary, and retries a write', async () => {
    const thread = `thr_upload_${randomUUID()}`;
    const session = await sessionOn(client, thread);
    const sandboxId = session.response.sandbox.id;
    const sandbox = session.sandbox({ retry: RIDE_OUT_RESTARTS });
    const workspace = hostWorkspace(broker.dataDir(), sandboxId);
    const whole = randomBytes(3 << 20);
    await sandbox.files.write('kept/whole.bin', whole);
    for (let round = 1; round <= ROUNDS; round++) {
      const before = treeHashes(workspace);
      // An upload that sends 8 MiB, then waits: the agent dies with half a file written.
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (sent >= 8 << 20) await held;
          if (sent >= 16 << 20) return controller.close();
          controller.enqueue(randomBytes(1 << 20));
          sent += 1 << 20;
        },
      });
      const upload = sandbox.files.write(`big-${round}.bin`, body);
      upload.catch(() => undefined);
      await until(
        () => uploadTemporaries(workspace).some((rel) => statSync(path.join(workspace, rel)).size > 1 << 20),
        'the upload to be half written',
      );

      const killed = killAgent(broker, sandboxId);
      // A stream is sent once: the client is told the connection broke, for this write.
      const error = await rejectionOf(upload, 'the upload', CEILING_MS);
      release();
      expect(error).toBeInstanceOf(BackendUnavailableError);
      expect(error.message).toContain(`write big-${round}.bin`);

      // Retried by the SDK until the restarted agent answers (a byte body may be sent again).
      const again = randomBytes(1 << 20);
      const written = await sandbox.files.write(`after-${round}.bin`, again);
      await restarted(broker, sandboxId, killed);
      expect(written.size).toBe(again.length);
      expect(sha256(await sandbox.files.read(`after-${round}.bin`))).toBe(sha256(again));

      // The partial one: not under its name, its temporary gone (not only hidden), the rest intact.
      await expect(sandbox.files.stat(`big-${round}.bin`)).rejects.toBeInstanceOf(NotFoundError);
      expect(uploadTemporaries(workspace)).toEqual([]);
      const after = treeHashes(workspace);
      after.delete(`after-${round}.bin`);
      expect(after).toEqual(before);
      expect(sha256(await sandbox.files.read('kept/whole.bin'))).toBe(sha256(whole));
    }
    await session.release();
  }, 600_000);

  it('keeps every file a background process wrote whole; the process is gone, said so', async () => {
    const thread = `thr_background_${randomUUID()}`;
    const session = await sessionOn(client, thread);
    const sandboxId = session.response.sandbox.id;
    const sandbox = session.sandbox({ retry: RIDE_OUT_RESTARTS });
    for (let round = 1; round <= ROUNDS; round++) {
      // Each file is written, then its number logged: a logged file was written whole.
      const script =
        `mkdir -p bg-${round}; i=0; while :; do i=$((i+1)); ` +
        `yes "line ${round}.$i" | head -n 4000 > bg-${round}/f$i; echo $i >> bg-${round}/done; done`;
      const started = await sandbox.exec.start({ argv: ['sh', '-c', script] });
      const logged = async () =>
        (await sandbox.files.readText(`bg-${round}/done`).catch(() => '')).split('\n').filter(Boolean);
      await until(async () => (await logged()).length >= 20, 'the background process to write files');

      const killed = killAgent(broker, sandboxId);
      await restarted(broker, sandboxId, killed);
      const done = await logged();
      expect(done.length).toBeGreaterThanOrEqual(20);
      for (const i of done)
        expect(sha256(await sandbox.files.read(`bg-${round}/f${i}`))).toBe(expected(round, Number(i)));
      // Like a container's restart: processes do not come back, and asking for one says so.
      const gone = await rejectionOf(sandbox.exec.get(started.process_id), 'the process', CEILING_MS);
      expect(gone).toBeInstanceOf(NotFoundError);
      expect(await sandbox.exec.list()).toEqual([]);
      // And nothing writes any more.
      const settled = (await logged()).length;
      expect(await sandbox.exec.run({ argv: ['sh', '-c', `wc -l < bg-${round}/done`] })).toMatchObject({
        stdout: `${settled}\n`,
      });
    }
    await session.release();
  }, 600_000);
});

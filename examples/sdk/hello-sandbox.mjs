// A sandbox from your own code, with the SDK (@sbx/client) in plain JavaScript: ensure the
// thread's sandbox, write a file, run a command, read its output, release. README.md,
// "From your own code: the SDK", says how to install the SDK and run this.
//
//   SBX_BROKER_URL=http://127.0.0.1:8080 SBX_API_KEY=sbk_… node hello-sandbox.mjs [thread_id]
import { BrokerClient, BrokerSession } from '@sbx/client';

const thread = process.argv[2] ?? 'thr_sdk_example';
const broker = new BrokerClient(); // reads SBX_BROKER_URL and SBX_API_KEY

// ensure: attach to the thread's sandbox, or create it. The session refreshes its token by itself.
const session = await BrokerSession.ensure(broker, {
  scope: { type: 'thread', id: thread },
  actor: { type: 'agent', id: 'agt_example' },
});
// Release in `finally`, so a failure below never leaves the sandbox running. (TypeScript and
// Node ≥ 24 can write `await using session = …` instead; Node 20 has no such syntax.)
try {
  console.log(`thread ${thread}: sandbox ${session.response.sandbox.id}, workspace ${session.workspacePath}`);
  const sandbox = session.sandbox();

  // Paths are sandbox paths: relative ones are in the workspace.
  const written = await sandbox.files.write(
    'sum.py',
    'total = sum(range(10))\nprint("sum:", total)\nopen("out.txt", "w").write(f"{total}\\n")\n',
  );
  console.log(`wrote ${written.path}`);

  const run = await sandbox.exec.run({ argv: ['python3', 'sum.py'] }, { timeoutMs: 60_000 });
  console.log(`python3 sum.py: exit ${run.exit_code}, stdout: ${run.stdout.trim()}`);

  // What the command wrote is a file like any other.
  console.log(`out.txt: ${(await sandbox.files.readText('out.txt')).trim()}`);
} finally {
  await session.release(); // the thread's last binding: the sandbox ends
  console.log('released');
}

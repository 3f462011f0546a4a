// A deep agent and a human in one sandbox, against a running broker (`npx -y pnpm@12.4.2 start`):
//   SBX_BROKER_URL=… SBX_API_KEY=… npx tsx examples/langgraph/shared-sandbox.ts [thread_id]
import { HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { BrokerClient, BrokerSession, type Shell } from '@sbx/client';
import { SbxSandbox } from '@sbx/langgraph';
import { makeAgent } from './graph.js';

const thread = process.argv[2] ?? `thr_demo_${Date.now()}`;
const say = (line: string): void => void process.stdout.write(`${line}\n`);

/** The first line of the last result of tool `name` in a run's messages. */
function lastToolResult(messages: BaseMessage[], name: string): string {
  const found = messages.filter((m) => ToolMessage.isInstance(m) && m.name === name).at(-1);
  return found?.text.split('\n')[0] ?? '(none)';
}

/** Types `command` into the shell and resolves with what it printed, once the marker shows up. */
function typeAndWait(shell: Shell, command: string): Promise<string> {
  const marker = `DONE-${Math.floor(Math.random() * 1e6)}`;
  return new Promise((resolve) => {
    let seen = '';
    const stop = shell.onData((chunk) => {
      seen += chunk.toString('utf8');
      // `$((0))` keeps the marker out of the echoed command line: only the output has it whole.
      if (!seen.includes(`${marker}0`)) return;
      stop();
      resolve(seen);
    });
    shell.write(`${command}; echo ${marker}$((0))\n`);
  });
}

// One backend object serves every thread of the graph: each run's thread_id picks its sandbox.
const backend = await SbxSandbox.create({ perThread: true });
const config = { configurable: { thread_id: thread } };
try {
  const workspace = await backend.workspacePathFor(thread);
  const agent = makeAgent(backend, workspace);
  say(`thread ${thread}, workspace ${workspace}`);

  const first = await agent.invoke({ messages: [new HumanMessage('Write report.py and run it.')] }, config);
  say(`agent ran report.py: ${lastToolResult(first.messages, 'execute')}`);

  // A human joins the same thread's sandbox (attach only) and works in a shell.
  const human = await BrokerSession.get(new BrokerClient(), {
    scope: { type: 'thread', id: thread },
    actor: { type: 'human', id: 'usr_example' },
  });
  try {
    const shell = await human.sandbox().openShell({ cols: 120, rows: 30 });
    const seen = await typeAndWait(shell, 'cat report.py report.log');
    const sawFile = seen.includes('print("total:", 1 + 2)') && /total: 3/.test(seen);
    say(`human sees report.py and its output in a shell: ${sawFile ? 'yes' : 'NO'}`);
    await typeAndWait(shell, `printf 'print("total:", 40 + 2)\\n' > report.py`);
    say('human edited report.py');
    shell.write('exit\n');
    await shell.exited;
  } finally {
    await human.release();
  }

  const second = await agent.invoke({ messages: [new HumanMessage('Run it again.')] }, config);
  const read = second.messages.filter((m) => ToolMessage.isInstance(m) && m.name === 'read_file').at(-1);
  say(`agent reads: ${read?.text.split('\n').at(-1) ?? '(none)'}`);
  say(`agent ran report.py: ${lastToolResult(second.messages, 'execute')}`);
} finally {
  // The agent's binding was the sandbox's last one: releasing it ends the sandbox.
  await backend.close();
}

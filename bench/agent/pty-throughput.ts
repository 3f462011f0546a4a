import { spawn } from 'node-pty';
import { atLeast, durationNs, info, median, type Verdict } from '../lib/measure.js';
import { cpuMs } from '../lib/process-stats.js';
import { startAgentProcess } from './agent-process.js';
import { ShellSocket, type OutputMode } from './shell-socket.js';

const OUTPUT_BYTES = 50_000_000;
const COMMAND = `head -c ${OUTPUT_BYTES} /dev/zero | tr '\\0' a`;
// Five alternating runs: the median of three swung by ±0.1× on a 2-core machine.
const RUNS = 5;

/**
 * The floor: the same command on a local node-pty, read as Buffers (like the agent) until
 * the last byte. The trailing sleep keeps the session leader alive meanwhile: a terminal
 * whose leader exits is hung up and drops unread output (the agent's drain wrapper exists
 * for the same reason).
 */
function readLocally(): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    let bytes = 0;
    const term = spawn('/bin/sh', ['-c', `${COMMAND}; sleep 5`], { cols: 80, rows: 24, encoding: null });
    term.onData((chunk: string | Buffer) => {
      bytes += chunk.length;
      if (bytes < OUTPUT_BYTES) return;
      resolve(Number(process.hrtime.bigint() - started));
      term.kill('SIGKILL');
    });
    term.onExit(() => reject(new Error(`local PTY delivered ${bytes} bytes`)));
  });
}

interface Relayed {
  readonly ns: number;
  readonly frames: number;
}

/** The subject: typed into an agent shell, counted from the WebSocket until the exit frame. */
async function readThroughAgent(wsUrl: string, token: string, mode: OutputMode): Promise<Relayed> {
  const shell = await ShellSocket.start(wsUrl, token, mode);
  const ns = await durationNs(async () => {
    shell.type(`${COMMAND}; exit`);
    await shell.closed();
  });
  if (shell.stdoutBytes < OUTPUT_BYTES || shell.exitCode !== 0)
    throw new Error(`agent shell delivered ${shell.stdoutBytes} bytes, exit ${shell.exitCode}`);
  return { ns, frames: shell.outputFrames };
}

/**
 * PTY output throughput: 50 MB through an agent shell over its WebSocket, against the
 * same output read from a local node-pty. Ratio = floor time / agent time (a throughput
 * ratio), the median of 5 alternating runs each; target ≥ 0.8×. The agent's time starts
 * once the shell is ready, so the shell's own startup is not part of it. `binary`: output
 * as binary messages (`output: 'binary'`); `json`: the default `stdout` frames, which the
 * client also has to parse.
 */
async function benchPty(mode: OutputMode): Promise<Verdict[]> {
  const name = mode === 'binary' ? 'pty' : 'pty json';
  const agent = await startAgentProcess();
  try {
    // One untimed run of each first: JIT and first-use costs are not what is measured.
    await readLocally();
    await readThroughAgent(agent.wsUrl, agent.token, mode);
    const local: number[] = [];
    const relayed: number[] = [];
    let frames = 0;
    let agentCpu = 0;
    let clientCpu = 0;
    for (let run = 0; run < RUNS; run++) {
      local.push(await readLocally());
      agentCpu -= cpuMs(agent.pid);
      const client = process.cpuUsage();
      const result = await readThroughAgent(agent.wsUrl, agent.token, mode);
      const used = process.cpuUsage(client);
      agentCpu += cpuMs(agent.pid);
      clientCpu += (used.user + used.system) / 1000;
      relayed.push(result.ns);
      frames += result.frames;
    }
    const mbPerS = (ns: number): number => OUTPUT_BYTES / 1e6 / (ns / 1e9);
    return [
      info(`${name} floor: local node-pty`, mbPerS(median(local)), 'MB/s', '(floor)'),
      info(`${name} through agent WebSocket`, mbPerS(median(relayed)), 'MB/s'),
      info(`${name} agent CPU per run (50 MB)`, agentCpu / RUNS, 'ms'),
      info(`${name} client CPU per run (50 MB)`, clientCpu / RUNS, 'ms'),
      info(`${name} output messages per run`, frames / RUNS, ''),
      atLeast(`${name} throughput agent / floor`, median(local) / median(relayed), '×', 0.8),
    ];
  } finally {
    await agent.stop();
  }
}

export const benchPtyThroughput = (): Promise<Verdict[]> => benchPty('binary');
export const benchPtyJsonThroughput = (): Promise<Verdict[]> => benchPty('json');

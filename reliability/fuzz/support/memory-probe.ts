// Preloaded into a fuzz target (`node --expose-gc --import <tsx> --import <this file> …`):
// on SIGUSR2 it collects garbage and writes one line to standard error,
// `{"fuzz_memory":{"rss":…,"heapUsed":…,…}}`, which targets.ts reads. The target's own code
// is untouched; SIGUSR2 is not used by node, the broker or the agent. It also stops the
// target (SIGTERM) when the test process goes, so that a killed run leaves no target behind.
const collect = (globalThis as { gc?: () => void }).gc;

process.on('SIGUSR2', () => {
  // Twice: the first pass runs finalizers whose objects the second one frees.
  collect?.();
  collect?.();
  const usage = process.memoryUsage();
  process.stderr.write(`${JSON.stringify({ fuzz_memory: { ...usage, gc: collect !== undefined } })}\n`);
});

// A target outlives a killed test run unless it notices: its standard input is the test's pipe.
process.stdin.on('end', () => process.kill(process.pid, 'SIGTERM'));
process.stdin.resume();

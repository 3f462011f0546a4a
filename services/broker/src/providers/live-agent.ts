// What the local provider keeps of each agent process it started.
import type { AgentProcess } from './agent-process.js';
import type { Dataplane } from './provider.js';
import type { SandboxPaths, SandboxRecord } from './sandbox-layout.js';

export interface LiveAgent {
  readonly agent: AgentProcess;
  readonly paths: SandboxPaths;
  readonly record: SandboxRecord;
  /** A fresh token for the broker's own health probe of this agent. */
  bearer: (() => string) | undefined;
  dataplane: Dataplane | undefined;
  /** Set when the provider itself ends the agent, so its exit is not reported as a crash. */
  expectedExit: boolean;
}

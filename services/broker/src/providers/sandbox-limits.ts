import { z } from 'zod';

/**
 * What one sandbox may use. Enforced by a cgroup per sandbox where the host lets the
 * broker make one (processes, memory, CPU), and always by rlimits on the agent, which
 * every user process inherits (processes of the sandbox's user, size of any one file), and
 * by a workspace volume of its own size where the broker can make one.
 */
export const SandboxLimits = z.object({
  maxProcesses: z.number().int().positive(),
  memoryBytes: z.number().int().positive(),
  /** 1000 = one core. */
  cpuMillicores: z.number().int().positive(),
  maxFileBytes: z.number().int().positive(),
  /** The workspace's size, where it can be a volume of its own (see workspace-volumes.ts). */
  diskBytes: z.number().int().positive(),
});
export type SandboxLimits = z.infer<typeof SandboxLimits>;

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  maxProcesses: 256,
  memoryBytes: 2 * 1024 ** 3,
  cpuMillicores: 1000,
  maxFileBytes: 1024 ** 3,
  diskBytes: 10 * 1024 ** 3,
};

// The Pod Security Standards (kubernetes.io/docs/concepts/security/pod-security-standards,
// version `latest`), as Pod Security Admission checks a pod spec: which rules of a level a pod
// breaks, one line each. Enough to tell what a namespace label admits; Windows-only fields and
// the AppArmor annotations are left out (nothing here sets them).

export type PodSecurityLevel = 'baseline' | 'restricted';

interface Context {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  privileged?: boolean;
  allowPrivilegeEscalation?: boolean;
  procMount?: string;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: { type?: string };
  seLinuxOptions?: { type?: string; user?: string; role?: string };
  appArmorProfile?: { type?: string };
}

interface CheckedContainer {
  name: string;
  ports?: { containerPort?: number; hostPort?: number }[];
  securityContext?: Context;
}

/** What of a pod spec the standards look at (a `V1PodSpec` fits). */
export interface CheckedPod {
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  securityContext?: Omit<
    Context,
    'privileged' | 'allowPrivilegeEscalation' | 'procMount' | 'capabilities'
  > & {
    sysctls?: { name: string }[];
  };
  containers: CheckedContainer[];
  initContainers?: CheckedContainer[];
  volumes?: { name: string }[];
}

const BASELINE_CAPABILITIES = new Set([
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
]);
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);
const SELINUX_TYPES = new Set([
  '',
  'container_t',
  'container_init_t',
  'container_kvm_t',
  'container_engine_t',
]);
const RESTRICTED_VOLUMES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);

const contextProblems = (context: Context | undefined): string[] =>
  [
    context?.seccompProfile?.type === 'Unconfined' ? 'seccomp Unconfined' : '',
    context?.appArmorProfile?.type === 'Unconfined' ? 'AppArmor Unconfined' : '',
    context?.seLinuxOptions?.user !== undefined || context?.seLinuxOptions?.role !== undefined
      ? 'SELinux user or role'
      : '',
    SELINUX_TYPES.has(context?.seLinuxOptions?.type ?? '') ? '' : 'SELinux type',
  ].filter((problem) => problem !== '');

function baselineProblems(pod: CheckedPod, containers: CheckedContainer[]): string[] {
  const podLevel = [
    ...(pod.hostNetwork === true || pod.hostPID === true || pod.hostIPC === true ? ['host namespaces'] : []),
    ...(pod.volumes ?? []).filter((v) => 'hostPath' in v).map((v) => `hostPath volume ${v.name}`),
    ...(pod.securityContext?.sysctls ?? [])
      .filter((s) => !SAFE_SYSCTLS.has(s.name))
      .map((s) => `sysctl ${s.name}`),
    ...contextProblems(pod.securityContext),
  ];
  const perContainer = containers.flatMap((container) => {
    const context = container.securityContext;
    const added = context?.capabilities?.add ?? [];
    return [
      ...(context?.privileged === true ? ['privileged'] : []),
      ...added.filter((cap) => !BASELINE_CAPABILITIES.has(cap)).map((cap) => `capability ${cap}`),
      ...((container.ports ?? []).some((port) => (port.hostPort ?? 0) !== 0) ? ['host port'] : []),
      ...((context?.procMount ?? 'Default') === 'Default' ? [] : ['procMount']),
      ...contextProblems(context),
    ].map((problem) => `${container.name}: ${problem}`);
  });
  return [...podLevel, ...perContainer];
}

function restrictedProblems(pod: CheckedPod, containers: CheckedContainer[]): string[] {
  const podContext = pod.securityContext;
  const podLevel = [
    ...(pod.volumes ?? []).flatMap((volume) =>
      Object.keys(volume)
        .filter((key) => key !== 'name' && !RESTRICTED_VOLUMES.has(key))
        .map((key) => `${key} volume ${volume.name}`),
    ),
    ...(podContext?.runAsUser === 0 ? ['pod runAsUser 0'] : []),
  ];
  const perContainer = containers.flatMap((container) => {
    const context = container.securityContext;
    const seccomp = context?.seccompProfile?.type ?? podContext?.seccompProfile?.type;
    return [
      ...(context?.allowPrivilegeEscalation === false ? [] : ['allowPrivilegeEscalation not false']),
      ...((context?.runAsNonRoot ?? podContext?.runAsNonRoot) === true ? [] : ['runAsNonRoot not true']),
      ...(context?.runAsUser === 0 ? ['runAsUser 0'] : []),
      ...(seccomp === 'RuntimeDefault' || seccomp === 'Localhost' ? [] : ['seccomp not RuntimeDefault']),
      ...(context?.capabilities?.drop?.includes('ALL') === true ? [] : ['capabilities not dropped']),
      ...(context?.capabilities?.add ?? [])
        .filter((cap) => cap !== 'NET_BIND_SERVICE')
        .map((cap) => `adds ${cap}`),
    ].map((problem) => `${container.name}: ${problem}`);
  });
  return [...podLevel, ...perContainer];
}

/** What keeps `pod` out of a namespace enforcing `level` (empty: admitted). */
export function podSecurityViolations(pod: CheckedPod, level: PodSecurityLevel): string[] {
  const containers = [...(pod.initContainers ?? []), ...pod.containers];
  const baseline = baselineProblems(pod, containers);
  return level === 'baseline' ? baseline : [...baseline, ...restrictedProblems(pod, containers)];
}

# syntax=docker/dockerfile:1
# The stateless sandbox agent image (SANDBOX_IMAGE, default sbx-agent:latest), built from the
# repository root: docker build -f deploy/docker/agent.Dockerfile -t sbx-agent:latest .
# The contract it follows is docs/deploy.md, "Agent image": the container starts as root with
# only CAP_SETUID and CAP_SETGID, and setpriv at once splits the agent's identity (D22): real
# uid/gid `sbx-agent` (1001:1001), its own; effective uid/gid `sandbox` (1000:1000), the user's.
# Every capability is gone before tini starts. /workspace a volume owned by `sandbox`; key,
# revocations and client environment under /run/sbx, readable by group 1001 only; read-only root.

# Build: the whole workspace installed as CI installs it, then the agent bundled into one file
# with node-pty (compiled here for this Debian and this Node) next to it.
FROM node:20-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN npx -y pnpm@12.4.2 install --frozen-lockfile
RUN node scripts/build-agent.mjs /opt/sbx/agent

# Runtime: what user code gets. python3 and node are execute_code's interpreters, bash the
# shells'; tini is PID 1 so orphaned user processes are reaped and signals reach the agent.
FROM node:20-bookworm-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini python3 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# The base image's `node` user holds uid 1000, which the contract gives to `sandbox`; 1001 is
# the agent's own identity, with no home and no shell (nothing ever logs in as it). /run/sbx is
# root's and 0755: the user may traverse it (the agent stats and watches it as the user), while
# the files the provider puts there are readable by group 1001 only. setpriv is util-linux's,
# an essential package of every Debian image; the build fails here if it is missing.
RUN userdel --remove node \
 && (groupdel node 2>/dev/null || true) \
 && groupadd --gid 1000 sandbox \
 && useradd --uid 1000 --gid 1000 --home-dir /workspace --no-create-home --shell /bin/bash sandbox \
 && groupadd --gid 1001 sbx-agent \
 && useradd --uid 1001 --gid 1001 --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin sbx-agent \
 && mkdir -p /workspace /run/sbx \
 && chown 1000:1000 /workspace \
 && chown 0:0 /run/sbx \
 && chmod 0755 /run/sbx \
 && test -x /usr/bin/setpriv
# Root-owned and read-only to the sandbox user: user code cannot rewrite its own agent.
COPY --from=build --chown=root:root /opt/sbx/agent /opt/sbx/agent
# No key here: the provider mounts it at /run/sbx/agent.key (never env or argv).
ENV HOME=/workspace \
    WORKSPACE_ROOT=/workspace \
    HOST=0.0.0.0 \
    PORT=8080 \
    AGENT_LAUNCHER=direct \
    SANDBOX_SIGNING_KEY_FILE=/run/sbx/agent.key
WORKDIR /workspace
VOLUME ["/workspace"]
# Root, so that setpriv may set the split identity; the providers grant only CAP_SETUID and
# CAP_SETGID, and the kernel clears those once no uid of the process is 0 (before tini runs).
USER 0:0
EXPOSE 8080
# Liveness only: /healthz answers 200 to anyone. Slim images have no curl; node has fetch. The
# engine runs the check as the container's user (root): setpriv makes it `nobody` first.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/usr/bin/setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--", "node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Real ids the agent's own, effective ids the user's, no supplementary group; tini is PID 1
# (reaps orphans, forwards signals) and runs the agent with those ids.
ENTRYPOINT ["/usr/bin/setpriv", "--ruid", "1001", "--euid", "1000", "--rgid", "1001", "--egid", "1000", "--clear-groups", "--", "/usr/bin/tini", "--", "node", "/opt/sbx/agent/main.mjs"]

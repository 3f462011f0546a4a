# syntax=docker/dockerfile:1
# The stateless sandbox agent image (SANDBOX_IMAGE, default sbx-agent:latest), built from the
# repository root: docker build -f deploy/docker/agent.Dockerfile -t sbx-agent:latest .
# The contract it follows is docs/deploy.md, "Agent image": non-root `sandbox` (1000:1000)
# under tini, /workspace a volume, key and revocations under /run/sbx, read-only root.

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
# The base image's `node` user holds uid 1000, which the contract gives to `sandbox`.
RUN userdel --remove node \
 && (groupdel node 2>/dev/null || true) \
 && groupadd --gid 1000 sandbox \
 && useradd --uid 1000 --gid 1000 --home-dir /workspace --no-create-home --shell /bin/bash sandbox \
 && mkdir -p /workspace /run/sbx \
 && chown 1000:1000 /workspace /run/sbx \
 && chmod 0700 /run/sbx
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
USER 1000:1000
EXPOSE 8080
# Liveness only: /healthz answers 200 to anyone. Slim images have no curl; node has fetch.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/opt/sbx/agent/main.mjs"]

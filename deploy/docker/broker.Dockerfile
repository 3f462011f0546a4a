# syntax=docker/dockerfile:1
# The broker image, built from the repository root:
#   docker build -f deploy/docker/broker.Dockerfile -t sbx-broker:latest .
# Configuration is the environment of services/broker/src/config.ts (docs/deploy.md);
# secrets (BROKER_MASTER_KEY, DATABASE_URL with its password, …) come at run time, never here.

# Build: the whole workspace installed as CI installs it; the postinstall generates the Prisma
# client offline. scripts/build-broker.mjs then bundles the broker (its TypeScript, the
# workspace packages and the generated client) into services/broker/dist, as `pnpm start` does;
# the other packages load from node_modules.
FROM node:20-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN npx -y pnpm@12.4.2 install --frozen-lockfile
RUN node scripts/build-broker.mjs

FROM node:20-bookworm-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 broker \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/sbx-broker --no-create-home \
      --shell /usr/sbin/nologin broker \
 && mkdir -p /var/lib/sbx-broker \
 && chown 10001:10001 /var/lib/sbx-broker \
 && chmod 0700 /var/lib/sbx-broker
# Root-owned: the broker's own code is read-only to the broker.
COPY --from=build --chown=root:root /app /app
WORKDIR /app
# Migrations are applied at start (openDatabase with migrate: true); /readyz reports them.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    BROKER_DATA_DIR=/var/lib/sbx-broker \
    LOG_FORMAT=json
# glibc malloc keeps up to 128 MiB free at the top of its heap (16 MiB padding) instead of
# handing it back at once: the relay's socket read buffers otherwise land in pages the kernel
# must fault in again, about one fault per 4 KiB relayed (docs/deploy.md, bench/README.md).
ENV MALLOC_TRIM_THRESHOLD_=134217728 \
    MALLOC_TOP_PAD_=16777216
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
# --no-memory-reducer: V8 otherwise shrinks an idle broker's heap limits, and the next relayed
# download's read buffers (external memory) then trigger a full GC every few megabytes
# (docs/deploy.md). Not for the agent, whose idle memory the reducer keeps small.
CMD ["node", "--no-memory-reducer", "services/broker/dist/main.mjs"]

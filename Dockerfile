# The service image: one image for every role, the command picks it (scripts/docker-entrypoint.sh):
#
#   docker build -t payments-service .
#   docker run payments-service api|relay|settlement|webhooks|all|migrate|merchant:create ...
#
# NODE_IMAGE is the base of every stage; the official Node 20 image by default. A machine that
# cannot pull passes a locally built one (this project's CI: .ci/images/README.md). DESIGN 68.
ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: all dependencies, TypeScript -> dist/
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund --loglevel=warn
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# --- deps: production dependencies only (its own stage so a source change does not reinstall)
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=warn && npm cache clean --force

# --- runtime
FROM ${NODE_IMAGE}
# tini as PID 1: it forwards SIGTERM/SIGINT to node (which drains and closes, src/platform/
# shutdown.ts) and reaps zombies; a bare node as PID 1 gets no default signal handling from the
# kernel. From Debian's archive, so it needs no download of its own.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
# HOST: the public port on every interface of the container. INTERNAL_HOST: the internal listener
# (/metrics, detailed /readyz, /healthz) on the container's interfaces too, so the HEALTHCHECK and
# agents on the container network reach it; publish 3000 only, never 9464.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    INTERNAL_HOST=0.0.0.0 \
    METRICS_PORT=9464
EXPOSE 3000 9464
# Healthy = the process's own /readyz on the internal listener answers 200 (its dependencies are
# reachable). No curl in the image: node's fetch, bounded by the timeout.
HEALTHCHECK --interval=5s --timeout=4s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.METRICS_PORT||9464)+'/readyz',{signal:AbortSignal.timeout(3000)}).then(r=>process.exit(r.status===200?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/payments-entrypoint"]
CMD ["api"]
# Files are root-owned and read-only to the service user (COPY ignores USER).
USER node
WORKDIR /app
# The metadata above and the slow-changing files first, dist/ last: a source change rebuilds one
# layer here. package.json marks dist/*.js as ES modules; migrations/ for `migrate`;
# docs/asyncapi.yaml is served by the API at /asyncapi.yaml.
COPY scripts/docker-entrypoint.sh /usr/local/bin/payments-entrypoint
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY migrations ./migrations
COPY docs/asyncapi.yaml ./docs/asyncapi.yaml
COPY --from=build /app/dist ./dist

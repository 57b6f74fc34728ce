# syntax=docker/dockerfile:1
# Switchboard in a container: build, production dependencies, and a slim runtime
# that runs the compiled gateway with plain node as PID 1 (it handles SIGTERM:
# in-flight replies are drained before it exits). test/deploy/dockerfile.test.ts
# runs these steps outside a container runtime to keep them honest.
#
#   docker build -t switchboard .
#   docker run -p 127.0.0.1:8787:8787 -v switchboard-data:/data --env-file .env switchboard
#
# .env from .env.example works as it is: it leaves DATABASE_URL and HTTP_HOST unset, so the
# image's values below hold. Set OPERATOR_TOKEN in it: on 0.0.0.0 the gateway refuses to start
# without one. `docker exec switchboard npx switchboard doctor` runs the CLI inside.

# 1. Production dependencies only: no Prisma CLI, tsx, TypeScript or esbuild. This image has
#    the compilers better-sqlite3 falls back to when no prebuilt binary can be fetched.
FROM node:20-bookworm AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/generate.mjs scripts/build.mjs scripts/build-patches.mjs scripts/serve-process.mjs scripts/link-bin.mjs ./scripts/
COPY tools/stubs/ ./tools/stubs/
RUN npm ci --omit=dev

# 2. Build, on top of those: the README's `npm install` adds the dev dependencies from the
#    lockfile, generates the Prisma clients and compiles src/ and adapters/ into dist/.
FROM deps AS build
COPY . .
RUN npm install

# 3. Runtime.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    DATABASE_URL=file:/data/switchboard.db \
    HTTP_HOST=0.0.0.0 \
    HTTP_PORT=8787 \
    MALLOC_ARENA_MAX=2 \
    MALLOC_TRIM_THRESHOLD_=131072 \
    MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin/ ./bin/
RUN mkdir -p /data && chown node:node /data
USER node
# The SQLite database (DATABASE_URL above). With PostgreSQL nothing is written here.
VOLUME /data
EXPOSE 8787
# GET /healthz where the gateway listens: HTTP_HOST and HTTP_PORT as the gateway reads them
# (the environment, --env-file included, then .env in /app), a wildcard bind on loopback.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "bin/healthcheck.mjs"]
# The Node flags and the MALLOC_ variables above are `npm start`'s (scripts/serve-process.mjs says
# why: they bound the memory V8 and malloc keep); the build made its code cache under them.
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=50", "--compact-on-every-full-gc", "bin/switchboard.mjs", "serve"]

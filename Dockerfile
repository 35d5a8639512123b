# One image with every tickwork app and the CLI: docker build -t tickwork .
# The container's command picks the app: node apps/scheduler/dist/main.js, node apps/worker/dist/main.js or
# node apps/dashboard/dist/main.js (docker-compose.yml and deploy/kubernetes set it per service).
# Stages: pruner (turbo prune: the three apps and the CLI, with their workspace deps and a pruned lockfile),
# builder (install from the pruned lockfile, compile, then keep production deps only), runtime (slim, non-root).
# Written for Docker's legacy builder too: no RUN --mount, no heredocs.

FROM node:20-bookworm-slim AS base
# corepack may not reach the registry it wants; npm does. Keep in step with "packageManager" in package.json.
# Some node images already have corepack's pnpm shims on PATH; they would shadow (and block) the real pnpm.
RUN rm -f /usr/local/bin/pnpm /usr/local/bin/pnpx && npm i -g pnpm@12.4.2 && pnpm --version
WORKDIR /repo
ENV TURBO_TELEMETRY_DISABLED=1 npm_config_update_notifier=false

FROM base AS pruner
# Same version as the root devDependency, so the pruned lockfile is the one pnpm expects.
RUN npm i -g turbo@2.11.11
COPY . .
RUN turbo prune @tickwork/scheduler @tickwork/worker @tickwork/dashboard @tickwork/cli --docker --out-dir out

FROM base AS builder
# Manifests and lockfile first: this layer (the slow install) is reused until a dependency changes.
COPY --from=pruner /repo/out/json/ .
RUN pnpm install --frozen-lockfile
COPY --from=pruner /repo/out/full/ .
# turbo prune copies workspace packages only; the shared compiler settings live at the root.
COPY tsconfig.base.json ./
RUN pnpm exec turbo run build --filter=@tickwork/scheduler --filter=@tickwork/worker --filter=@tickwork/dashboard --filter=@tickwork/cli \
 && rm -rf node_modules apps/*/node_modules packages/*/node_modules .turbo apps/*/.turbo packages/*/.turbo \
 && pnpm install --frozen-lockfile --prod --offline

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
# Root owns the code; the app runs as `node` and cannot change it.
COPY --from=builder /repo/ ./
RUN printf '#!/bin/sh\nexec node /app/apps/cli/dist/main.js "$@"\n' >/usr/local/bin/tickwork \
 && chmod 755 /usr/local/bin/tickwork \
 && for app in scheduler worker dashboard; do test -f "apps/$app/dist/main.js" || { echo "apps/$app/dist/main.js is missing" >&2; exit 1; }; done \
 && tickwork help >/dev/null
USER node
# No default app: the command names it, e.g. `docker run tickwork node apps/worker/dist/main.js`. Run node
# itself (no shell in between), so SIGTERM from `docker stop` or the kubelet reaches the app and it drains.
CMD ["sh", "-c", "echo 'tickwork: name the app in the command: node apps/scheduler/dist/main.js, node apps/worker/dist/main.js or node apps/dashboard/dist/main.js (tickwork help lists the CLI commands)' >&2; exit 64"]

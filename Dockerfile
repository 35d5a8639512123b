# One image recipe for every tickwork app: docker build --build-arg APP=worker|scheduler|dashboard .
# Stages: pruner (turbo prune: only APP and the CLI, with their workspace deps and a pruned lockfile),
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
ARG APP
RUN test -n "$APP" || { echo "build with --build-arg APP=scheduler|worker|dashboard" >&2; exit 1; } \
 && turbo prune "@tickwork/$APP" @tickwork/cli --docker --out-dir out

FROM base AS builder
# Manifests and lockfile first: this layer (the slow install) is reused until a dependency changes.
COPY --from=pruner /repo/out/json/ .
RUN pnpm install --frozen-lockfile
COPY --from=pruner /repo/out/full/ .
# turbo prune copies workspace packages only; the shared compiler settings live at the root.
COPY tsconfig.base.json ./
ARG APP
RUN pnpm exec turbo run build --filter="@tickwork/$APP" --filter=@tickwork/cli \
 && rm -rf node_modules apps/*/node_modules packages/*/node_modules .turbo apps/*/.turbo packages/*/.turbo \
 && pnpm install --frozen-lockfile --prod --offline

FROM node:20-bookworm-slim AS runtime
ARG APP
ENV NODE_ENV=production TICKWORK_APP=$APP
WORKDIR /app
# Root owns the code; the app runs as `node` and cannot change it.
COPY --from=builder /repo/ ./
RUN printf '#!/bin/sh\nexec node /app/apps/cli/dist/main.js "$@"\n' >/usr/local/bin/tickwork \
 && chmod 755 /usr/local/bin/tickwork \
 && test -f "apps/$APP/dist/main.js" && tickwork help >/dev/null
USER node
# exec: node replaces the shell, so SIGTERM from `docker stop` reaches the app and it drains.
CMD ["sh", "-c", "exec node apps/$TICKWORK_APP/dist/main.js"]

#!/usr/bin/env bash
# BULLMQ_VERSION=6.7.6 pnpm test:bullmq: tickwork's whole test suite against another bullmq from the registry,
# in a copy of this working tree (the checkout itself is left as it is). docs/upgrading-bullmq.md.
#
# 1. The engine's contract (packages/bullmq-engine/src/contract) is checked against that bullmq: every entry
#    that differs is printed by name. Those are the internals to read before the upgrade.
# 2. The rest of the suite runs. Where the contract does not hold, the worker runs on BullMQ's public paths
#    (it decides so itself at start, as in production) and the fast paths' own tests are left out
#    (FAST_PATH_TESTS in packages/testkit/src/vitest-config.ts); everything else must pass.
# Exit status: that of step 2 (step 1 failing is the expected outcome of an upgrade, reported, not fatal).
set -euo pipefail
version="${BULLMQ_VERSION:?set BULLMQ_VERSION, e.g. BULLMQ_VERSION=6.7.6 pnpm test:bullmq}"
root="$(git rev-parse --show-toplevel)"
work="$(mktemp -d "${TMPDIR:-/tmp}/tickwork-bullmq-${version}-XXXX")"
echo "test:bullmq: bullmq ${version}, in ${work}"
# The working tree as it stands: tracked files and new ones git does not ignore.
git -C "$root" ls-files -co --exclude-standard -z | (cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$work"
cd "$work"
# The one pin of bullmq (pnpm-workspace.yaml's catalog), set to the version under test.
sed -i "s/^  'bullmq': .*/  'bullmq': ${version}/" pnpm-workspace.yaml
grep -q "^  'bullmq': ${version}\$" pnpm-workspace.yaml || { echo "test:bullmq: could not set bullmq's pin in pnpm-workspace.yaml" >&2; exit 1; }
pnpm install --no-frozen-lockfile --reporter=append-only >/dev/null
installed="$(node -e "console.log(require(require.resolve('bullmq/package.json', { paths: ['packages/bullmq-engine'] })).version)")"
echo "test:bullmq: installed bullmq ${installed}"
pnpm exec turbo run build --output-logs=errors-only

echo "test:bullmq: 1. the engine's contract against bullmq ${installed}"
contract=held
(cd packages/bullmq-engine && npx vitest run src/contract/contract.test.ts) || contract=broken
if [ "$contract" = held ]; then
  echo "test:bullmq: the contract holds: the worker keeps its fast paths, and every test runs"
  fast=on
else
  echo "test:bullmq: the contract does not hold (the entries above): the worker runs on BullMQ's public paths; the fast paths' tests are left out"
  fast=off
fi

echo "test:bullmq: 2. the suite"
# As `pnpm test` runs it (package.json), each step with the fast paths' tests in or out.
npx tsc -p tsconfig.check.json
TICKWORK_FAST_PATH_TESTS="$fast" npx vitest run --config vitest.libraries.config.ts
TICKWORK_FAST_PATH_TESTS="$fast" pnpm exec turbo run test --concurrency=1 --filter='./apps/*' --filter=@tickwork/e2e --env-mode=loose
echo "test:bullmq: bullmq ${installed}: contract ${contract}; the suite passed (${work})"

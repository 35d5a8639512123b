// Shared settings: see src/vitest-config.ts. `pnpm test` (package.json) runs this package's files two at a
// time, except the cluster chaos test, which runs on its own after them: it kills masters on timers and
// counts repeated deliveries, so it gets the machine to itself.
export { default } from './src/vitest-config.ts';

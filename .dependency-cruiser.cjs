// The layers of src/ (README, Layout): data flows down, never back up. `npm test` runs this check
// (npm run layers), so an upward import fails the test command with the offending import named.
// Each layer lists the layers below it that it may import; its own folder is always allowed.
// src/app.ts and src/main.ts wire everything together and may import any layer.
const MAY_IMPORT = {
  primitives: [],
  core: ['primitives'],
  evm: ['core', 'primitives'],
  config: ['core', 'primitives'],
  store: ['core', 'primitives'],
  wire: ['primitives'],
  chain: ['store', 'core', 'primitives', 'config'],
  // An upstream node as a source of blocks, receipts and state (upstream mode): a store of its own.
  upstream: ['chain', 'store', 'core', 'wire', 'primitives', 'config'],
  exec: ['evm', 'upstream', 'chain', 'store', 'core', 'wire', 'primitives', 'config'],
  ingest: ['exec', 'evm', 'upstream', 'chain', 'store', 'core', 'wire', 'primitives', 'config'],
  services: ['exec', 'evm', 'ingest', 'upstream', 'chain', 'store', 'core', 'wire', 'primitives', 'config'],
  rpc: ['services', 'chain', 'core', 'wire', 'primitives', 'config'],
  // Metrics, logs and health probes: they know what a call, a limit or a head is, nothing of how
  // they are served or computed (app.ts hands them the parts to read).
  observe: ['config', 'core', 'primitives'],
  transport: ['rpc', 'observe', 'core', 'primitives', 'config'],
};

const layerRules = Object.entries(MAY_IMPORT).map(([layer, below]) => ({
  name: `${layer}-imports-only-below`,
  comment: `src/${layer}/ may import only ${[layer, ...below].map((l) => `src/${l}/`).join(', ')}`,
  severity: 'error',
  from: { path: `^src/${layer}/` },
  to: { path: '^src/', pathNot: `^src/(${[layer, ...below].join('|')})/` },
}));

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'no-unknown-layer',
      comment: 'every folder of src/ is a layer listed in .dependency-cruiser.cjs',
      severity: 'error',
      from: { path: '^src/[^/]+/' },
      to: { path: '^src/', pathNot: `^src/(${Object.keys(MAY_IMPORT).join('|')})/|^src/[^/]+\\.ts$` },
    },
    {
      name: 'no-import-of-entry-points',
      comment: 'src/app.ts and src/main.ts are the top: nothing in a layer imports them',
      severity: 'error',
      from: { path: '^src/[^/]+/' },
      to: { path: '^src/(app|main)\\.ts$' },
    },
    {
      name: 'no-ethereumjs-evm-in-src',
      comment:
        'src/ runs the EVM of src/evm only: @ethereumjs/vm and @ethereumjs/evm are devDependencies, the oracle of the differential tests (test/support/ethereumjsOracle/)',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: 'node_modules/@ethereumjs/(vm|evm)/' },
    },
    {
      name: 'no-circular',
      comment: 'a cycle (type-only imports included) ties modules that should change apart',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    combinedDependencies: false,
  },
};

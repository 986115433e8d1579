// The layers of src/ (README, Layout): data flows down, never back up. `npm test` runs this check
// (npm run layers), so an upward import fails the test command with the offending import named.
// Each layer lists the layers below it that it may import; its own folder is always allowed.
//
// Above the layers, the wiring root: the files directly in src/ (app.ts builds one server,
// service.ts opens, starts and closes what `ethtrace start` serves, with processes.ts,
// datadirWriter.ts and devChainDatadir.ts); it may import any layer. At the top, the CLI: src/cli/
// (one file per command: flags in, what is printed out) and src/main.ts, its entry (exit statuses);
// it may import the wiring root and any layer, and nothing imports it.
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

/** The wiring root: the files directly in src/ but main.ts. */
const WIRING_ROOT = '^src/(?!main\\.ts$)[^/]+\\.ts$';
const LAYERS = Object.keys(MAY_IMPORT).join('|');

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'no-unknown-layer',
      comment: 'every folder of src/ is a layer listed in .dependency-cruiser.cjs, or src/cli/',
      severity: 'error',
      from: { path: '^src/[^/]+/' },
      to: { path: '^src/', pathNot: `^src/(${LAYERS}|cli)/|^src/[^/]+\\.ts$` },
    },
    {
      name: 'layers-below-the-wiring-root',
      comment: 'the files directly in src/ wire the layers together: nothing in a layer imports them',
      severity: 'error',
      from: { path: `^src/(${LAYERS})/` },
      to: { path: '^src/[^/]+\\.ts$' },
    },
    {
      name: 'cli-is-the-top',
      comment: 'src/cli/ and src/main.ts are the top: nothing but the CLI imports them',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(cli/|main\\.ts$)' },
      to: { path: '^src/(cli/|main\\.ts$)' },
    },
    {
      name: 'access-built-by-the-wiring-root',
      comment:
        'the access control, its ledgers and counters (src/transport/access/) are made by the wiring root ' +
        '(src/service.ts, and src/processes.ts for the counters the API processes share) alone; outside src/transport/, only the keys file settings and the usage records ' +
        '(settings.ts, usage.ts: what `ethtrace keys` reads and writes) are imported elsewhere',
      severity: 'error',
      from: { path: '^src/', pathNot: `^src/transport/|${WIRING_ROOT}` },
      to: { path: '^src/transport/access/', pathNot: '^src/transport/access/(settings|usage)\\.ts$' },
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
      name: 'services-reach-exec-through-its-api',
      comment:
        "services (and rpc) see only the execution layer's API: src/exec/api.ts (the jobs, their payloads and results) and src/exec/client.ts (what runs them); the wiring root builds the rest",
      severity: 'error',
      from: { path: '^src/(services|rpc)/' },
      to: { path: '^src/exec/', pathNot: '^src/exec/(api|client)\\.ts$' },
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

// A worker thread of `ethtrace statetest --jobs N` (src/stateTestCommand.ts). Workers do not inherit
// the tsx loader of the main thread (see src/exec/pool/bootstrap.mjs), so each registers it first.
import { register } from 'tsx/esm/api';

register();
const { serveStateTestWorker } = await import('./stateTestCommand.ts');
serveStateTestWorker();

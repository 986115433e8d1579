// A worker thread of `ethtrace statetest --jobs N` run as TypeScript (tests): workers do not inherit
// the tsx loader of the main thread (see src/exec/pool/bootstrap.mjs), so it registers tsx first.
// Compiled (bin/build.mjs), the worker starts from statetestThread.js instead.
import { register } from 'tsx/esm/api';

register();
await import('./statetestThread.ts');

// A worker thread's entry. Workers do not inherit the tsx loader of the main thread: bin/ethtrace.mjs
// registers it through the API (nothing in execArgv to inherit), and on Node 20 `--import tsx` in a
// worker's execArgv registers nothing (tsx hooks only the main thread there). So each worker
// registers tsx itself, as bin/ethtrace.mjs does, before its first TypeScript import.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');

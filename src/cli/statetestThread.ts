// The entry of a worker thread of `ethtrace statetest --jobs N` (src/cli/statetest.ts).
import { serveStateTestWorker } from './statetest.ts';

serveStateTestWorker();

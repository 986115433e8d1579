// The entry of a worker thread of `ethtrace statetest --jobs N` (src/stateTestCommand.ts).
import { serveStateTestWorker } from './stateTestCommand.ts';

serveStateTestWorker();

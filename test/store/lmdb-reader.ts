// Child process of lmdb.test.ts: opens a datadir read-only while another process writes it. At start
// and for every request on stdin it checks that the whole head block is readable and reports the head.

import fs from 'node:fs';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { assertChainBlock } from './blocks.ts';

const datadir = process.argv[2];
if (datadir === undefined) throw new Error('usage: lmdb-reader.ts <datadir>');
const store = await openLmdbStore(datadir, { readOnly: true });

async function reportHead(): Promise<void> {
  const head = await store.getHead();
  if (head !== null) await assertChainBlock(store, head.number);
  process.stdout.write(`head ${head?.number ?? 'none'}\n`);
}

// Waiting for requests with a blocking read keeps the event loop, and with it any timer that would
// renew lmdb-js's read snapshot, from running between requests: a commit made meanwhile must become
// visible through getHead alone.
const request = Buffer.alloc(64);
await reportHead();
while (fs.readSync(0, request) > 0) await reportHead();
await store.close();

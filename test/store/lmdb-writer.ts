// Child process of lmdb.test.ts: imports `chainBlock`s from the stored head on, forever, printing each
// committed number, until the test kills it.

import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { chainBlock } from './blocks.ts';

const datadir = process.argv[2];
if (datadir === undefined) throw new Error('usage: lmdb-writer.ts <datadir>');
const store = await openLmdbStore(datadir);
const head = await store.getHead();
for (let number = head === null ? 0n : head.number + 1n; ; number++) {
  await store.commitBlock(chainBlock(number));
  process.stdout.write(`${number}\n`);
}

import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import { hexToBytes } from '@ethereumjs/util';
import { open } from 'lmdb';
import { keccak256 } from '../../src/primitives/keccak.ts';
import { checksumOf } from '../../src/store/lmdb/checksum.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { addressHistoryKey, blockNumberKey } from '../../src/store/lmdb/keys.ts';
import { encodeAccount, encodeReceipts, encodeTxLocation } from '../../src/store/lmdb/values.ts';
import { runCli, tempDir } from '../support/cli.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';

// One flipped byte inside a stored value of a real chain (the execution-apis conformance chain,
// imported), flipped in the LMDB file itself, must never be served: every read that meets it
// answers an error, and the log says which record is damaged (issue 19, item 10). Each value is
// found in data.mdb by its bytes and its checksum (so that only the live record is hit, not a copy
// in a freed page or a key that happens to hold the same hash), and each kind of record is
// damaged in a block of its own, so each answer below meets exactly one damaged record.

interface Answer {
  result?: unknown;
  error?: { code: number; message: string };
}

async function post(url: string, method: string, params: unknown[]): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as Answer;
}

const hex = (n: bigint | number) => `0x${n.toString(16)}`;

/**
 * Flips byte `at` (from the value's start) of every copy of `value ‖ checksum(key, value)` in
 * `file`; at least one must be there.
 */
function flipStoredValue(file: string, key: Uint8Array, value: Uint8Array, at: number): void {
  const sealed = Buffer.alloc(value.length + 4);
  sealed.set(value);
  sealed.writeUInt32BE(checksumOf(key, value), value.length);
  const data = readFileSync(file);
  let found = 0;
  for (let i = data.indexOf(sealed); i !== -1; i = data.indexOf(sealed, i + 1)) {
    data[i + at] = (data[i + at] as number) ^ 0x01;
    found++;
  }
  assert.ok(found > 0, `value under key ${Buffer.from(key).toString('hex')} not found in ${file}`);
  writeFileSync(file, data);
}

describe('a flipped byte in a stored value', () => {
  const dir = tempDir('ethtrace-flipped-');
  let chain: { datadir: string; cleanup: () => void };
  let intact: RunningServer;
  let damaged: RunningServer;
  const logged: string[] = [];
  /** The blocks damaged, one per kind of record, and what each answer below asks. */
  const reads: Array<{ record: string; method: string; params: unknown[] }> = [];

  before(async () => {
    chain = await importConformanceChain();
    intact = await startServer(chain.datadir);
    const store = intact.store;
    const head = (await store.getHead())?.number ?? 0n;
    // Blocks with transactions and logs, below the head (the head is checked when the store opens).
    const busy: Array<{ number: bigint; hash: Uint8Array; txHash: string; from: string; loggedTx: string }> =
      [];
    for (let n = 1n; n < head && busy.length < 7; n++) {
      const block = await intact.rpc<{ hash: string; transactions: Array<{ hash: string; from: string }> }>(
        'eth_getBlockByNumber',
        [hex(n), true],
      );
      const receipts = await intact.rpc<Array<{ logs: unknown[]; transactionHash: string }>>(
        'eth_getBlockReceipts',
        [hex(n)],
      );
      const tx = block.transactions[0];
      const logged = receipts.find((r) => r.logs.length > 0);
      if (tx && logged)
        busy.push({
          number: n,
          hash: hexToBytes(block.hash as `0x${string}`),
          ...{ txHash: tx.hash, from: tx.from, loggedTx: logged.transactionHash },
        });
    }
    assert.equal(busy.length, 7, 'the conformance chain has seven blocks with transactions and logs');
    const [b1, b2, b3, b4, b5, b6, b7] = busy as [
      (typeof busy)[0],
      (typeof busy)[0],
      (typeof busy)[0],
      (typeof busy)[0],
      (typeof busy)[0],
      (typeof busy)[0],
      (typeof busy)[0],
    ];

    const copy = join(dir.path, 'data');
    cpSync(chain.datadir, copy, { recursive: true });
    const file = join(copy, 'data.mdb');
    const storedValue = async (what: string, read: Promise<Uint8Array | null>) => {
      const value = await read;
      assert.ok(value, `${what} is stored`);
      return Uint8Array.from(value);
    };

    // Block 1: its header (a byte in the middle: the fields, not the list prefix).
    const header = await storedValue('header', store.getHeader(b1.hash));
    flipStoredValue(file, b1.hash, header, header.length >> 1);
    reads.push(
      { record: 'headers', method: 'eth_getBlockByNumber', params: [hex(b1.number), false] },
      {
        record: 'headers',
        method: 'eth_getBlockByHash',
        params: [`0x${Buffer.from(b1.hash).toString('hex')}`, false],
      },
    );
    // Block 2: its body, in the signature of its first transaction (served, it would change `from`).
    const body = await storedValue('body', store.getBody(b2.hash));
    const [txs] = RLP.decode(body) as unknown as [Array<Uint8Array | Uint8Array[]>];
    const first = txs[0] as Uint8Array | Uint8Array[];
    const txBytes = first instanceof Uint8Array ? first : RLP.encode(first);
    const txAt = Buffer.from(body).indexOf(Buffer.from(txBytes));
    assert.ok(txAt > 0);
    flipStoredValue(file, b2.hash, body, txAt + txBytes.length - 3);
    reads.push(
      {
        record: 'bodies',
        method: 'eth_getTransactionByBlockNumberAndIndex',
        params: [hex(b2.number), '0x0'],
      },
      { record: 'bodies', method: 'eth_getBlockByNumber', params: [hex(b2.number), true] },
      { record: 'bodies', method: 'eth_getTransactionByHash', params: [b2.txHash] },
      { record: 'bodies', method: 'trace_block', params: [hex(b2.number)] },
      { record: 'bodies', method: 'debug_traceBlockByNumber', params: [hex(b2.number), {}] },
    );
    // Block 3: its receipts as served (a byte of the text `"logIndex"` in its first receipt with logs).
    const json = await storedValue('receipt JSON', store.getBlockReceiptsJson(b3.hash));
    flipStoredValue(file, b3.hash, json, Buffer.from(json).indexOf('"logIndex"') + 3);
    reads.push(
      { record: 'receiptsJson', method: 'eth_getBlockReceipts', params: [hex(b3.number)] },
      { record: 'receiptsJson', method: 'eth_getTransactionReceipt', params: [b3.loggedTx] },
      {
        record: 'receiptsJson',
        method: 'eth_getLogs',
        params: [{ fromBlock: hex(b3.number), toBlock: hex(b3.number) }],
      },
    );
    // Block 4: its consensus receipts.
    const receipts = (await store.getReceipts(b4.hash)) ?? [];
    assert.ok(receipts.length > 0);
    const encodedReceipts = encodeReceipts(receipts);
    flipStoredValue(file, b4.hash, encodedReceipts, encodedReceipts.length - 5);
    reads.push({ record: 'receipts', method: 'debug_getRawReceipts', params: [hex(b4.number)] });
    // Block 5: its canonical hash (by number).
    flipStoredValue(file, blockNumberKey(b5.number), b5.hash, 7);
    reads.push(
      { record: 'canonical', method: 'eth_getBlockByNumber', params: [hex(b5.number), false] },
      { record: 'canonical', method: 'eth_getBlockReceipts', params: [hex(b5.number)] },
    );
    // Block 6: where its first transaction is (the transaction index).
    const location = await store.getTxLocation(hexToBytes(b6.txHash as `0x${string}`));
    assert.ok(location);
    flipStoredValue(
      file,
      hexToBytes(b6.txHash as `0x${string}`),
      encodeTxLocation(location.blockHash, location.blockNumber, location.index),
      40,
    );
    reads.push(
      { record: 'txIndex', method: 'eth_getTransactionByHash', params: [b6.txHash] },
      { record: 'txIndex', method: 'eth_getTransactionReceipt', params: [b6.txHash] },
    );
    // Block 6 too: the trie node that holds its first sender's account after it (a proof's last node).
    const proof = await intact.rpc<{ accountProof: string[] }>('eth_getProof', [b6.from, [], hex(b6.number)]);
    const leaf = hexToBytes(proof.accountProof.at(-1) as `0x${string}`);
    flipStoredValue(file, keccak256(leaf), leaf, leaf.length - 2);
    reads.push({ record: 'trieNodes', method: 'eth_getProof', params: [b6.from, [], hex(b6.number)] });
    // Block 7: the account of its first sender, as it was after that block (its balance).
    const sender = hexToBytes(b7.from as `0x${string}`);
    const account = await store.getAccountAt(sender, b7.number);
    assert.ok(account);
    const encoded = encodeAccount(account);
    flipStoredValue(file, addressHistoryKey(sender, b7.number), encoded, encoded.length - 1);
    reads.push(
      { record: 'accountHistory', method: 'eth_getBalance', params: [b7.from, hex(b7.number)] },
      { record: 'accountHistory', method: 'eth_getTransactionCount', params: [b7.from, hex(b7.number)] },
      // Run by a worker: the EVM reads the sender's account to move the value.
      {
        record: 'accountHistory',
        method: 'eth_call',
        params: [{ from: b7.from, to: `0x${'11'.repeat(20)}`, value: '0x1' }, hex(b7.number)],
      },
    );

    damaged = await startServer(copy, { log: (line) => logged.push(line) });
  });
  after(async () => {
    await intact?.close();
    await damaged?.close();
    chain?.cleanup();
    dir.cleanup();
  });

  it('is served by the intact chain (the reads below reach the records)', async () => {
    for (const { method, params } of reads) {
      const answer = await post(intact.url, method, params);
      assert.equal(answer.error, undefined, `${method}: ${JSON.stringify(answer.error)}`);
      assert.ok(answer.result !== null && answer.result !== undefined, method);
      assert.notDeepEqual(answer.result, [], method);
    }
  });

  it('answers every read that meets it with an error, and logs which record is damaged', async () => {
    for (const { record, method, params } of reads) {
      logged.length = 0;
      const answer = await post(damaged.url, method, params);
      assert.equal(
        answer.result,
        undefined,
        `${method} ${JSON.stringify(params)} served ${JSON.stringify(answer.result)}`,
      );
      assert.deepEqual(answer.error, { code: -32603, message: 'internal error' }, method);
      assert.ok(
        logged.some(
          (line) => line.includes(`its ${record} record under`) && line.includes('fails its checksum'),
        ),
        `${method}: ${logged.join('\n')}`,
      );
    }
  });
});

describe('a chain store written before values carried checksums', () => {
  const dir = tempDir('ethtrace-unchecked-');

  before(async () => {
    // What an earlier ethtrace left: records, each value as it is, and no format record.
    const env = open(dir.path, { noSubdir: false, compression: false, maxDbs: 32 });
    const meta = env.openDB<Uint8Array, Uint8Array>('meta', { keyEncoding: 'binary', encoding: 'binary' });
    await meta.put(Buffer.from('genesis'), Buffer.from('{}'));
    const canonical = env.openDB<Uint8Array, Uint8Array>('canonical', {
      keyEncoding: 'binary',
      encoding: 'binary',
    });
    await canonical.put(blockNumberKey(0n), new Uint8Array(32));
    await env.close();
  });
  after(() => dir.cleanup());

  it('is refused by start with one line saying why and what to do, exit status 2', async () => {
    const result = await runCli(['start', '--no-auth', '--port', '0', '--datadir', dir.path]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /written by an earlier ethtrace, which kept no checksum/);
    assert.match(result.stderr, /import the chain again into a new --datadir/);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
  });

  it('is refused by a read-only open as well (the API processes of --processes)', async () => {
    await assert.rejects(openLmdbStore(dir.path, { readOnly: true }), /kept no checksum/);
  });
});

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Block, createBlockFromBytesArray, createBlockHeaderFromBytesArray } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { bigIntToUnpaddedBytes, bytesToHex, hexToBytes } from '@ethereumjs/util';
import { type ChainSpec, readChainSpec } from '../../src/chain/genesis.ts';
import { ChainReader } from '../../src/chain/reader.ts';
import { Unavailable } from '../../src/core/errors.ts';
import {
  accountFromProof,
  blockFromRpc,
  type ForkRules,
  headerFromRpc,
  receiptsFromRpc,
} from '../../src/upstream/verify.ts';
import { formatHeader } from '../../src/wire/block.ts';
import { type Anvil, startAnvil } from '../support/anvil.ts';
import { CONFORMANCE, tempDir } from '../support/cli.ts';
import { devAccounts } from '../support/devAccounts.ts';
import { importFromAnvil } from '../support/exportChain.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';
import { buildTraceWorkload } from '../support/traceWorkload.ts';
import { buildBasicChain, freshAddress } from '../support/workload.ts';

// The verification library of upstream mode against real answers: anvil's (a chain with every
// transaction envelope, creations, logs, reverts and EIP-7702, built by the trace and basic
// workloads), and ethtrace's own for the execution-apis conformance chain (Frontier to Osaka:
// uncles, pre-Byzantium `root` receipts, blob transactions, withdrawals). Each check is then shown
// to catch one altered field of a real answer, and no malformed answer escapes as anything but
// Unavailable.

type Obj = Record<string, unknown>;
type Hex = `0x${string}`;

/** The object at `keys` under `root` (an answer being tampered with). */
function at(root: unknown, ...keys: Array<string | number>): Obj {
  let v = root;
  for (const k of keys) v = (v as Record<string | number, unknown>)[k];
  assert.ok(typeof v === 'object' && v !== null, `no object at ${keys.join('.')}`);
  return v as Obj;
}

function list(root: unknown, ...keys: Array<string | number>): unknown[] {
  const parent = at(root, ...keys.slice(0, -1));
  const v = parent[keys.at(-1) as string];
  assert.ok(Array.isArray(v), `no list at ${keys.join('.')}`);
  return v;
}

/** A deep copy of `json` with `change` applied. */
function tampered<T>(json: T, change: (copy: T) => void): T {
  const copy = structuredClone(json);
  change(copy);
  return copy;
}

/** `run` fails verification (Unavailable, the library's message prefix) with a message matching `pattern`. */
async function failsWith(run: () => unknown, pattern: RegExp): Promise<void> {
  await assert.rejects(
    async () => {
      await run();
    },
    (e: unknown) => {
      assert.ok(
        e instanceof Unavailable,
        `expected Unavailable, got ${e instanceof Error ? e.stack : String(e)}`,
      );
      assert.match(e.message, /^upstream answer failed verification: /);
      assert.match(e.message, pattern);
      return true;
    },
  );
}

/** Either succeeds or fails verification: never a TypeError or any other error. */
async function succeedsOrUnavailable(what: string, run: () => unknown): Promise<boolean> {
  try {
    await run();
    return true;
  } catch (e) {
    if (e instanceof Unavailable && e.message.startsWith('upstream answer failed verification: '))
      return false;
    assert.fail(`${what}: threw ${e instanceof Error ? e.stack : String(e)}`);
  }
}

/** The `result` of a method as the server's bytes, unparsed. */
async function servedResult(server: RunningServer, method: string, params: unknown[]): Promise<string> {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = await res.text();
  const prefix = '{"jsonrpc":"2.0","id":1,"result":';
  assert.ok(body.startsWith(prefix) && body.endsWith('}'), body.slice(0, 300));
  return body.slice(prefix.length, -1);
}

/** Values every field of an answer is replaced by in the malformed-answer sweeps. */
const BAD_VALUES: readonly unknown[] = [
  undefined,
  null,
  7,
  true,
  '',
  '0x',
  '0xzz',
  '0x1',
  `0x${'ab'.repeat(40)}`,
  [],
  {},
];

/** Every answer that differs from `json` in one field (recursively) taking one of BAD_VALUES. */
function* malformed(json: unknown, path = ''): Generator<[string, unknown]> {
  if (typeof json !== 'object' || json === null) return;
  const keys = Array.isArray(json) ? json.map((_, i) => i) : Object.keys(json);
  for (const key of keys) {
    const where = `${path}.${key}`;
    const was = JSON.stringify((json as Record<string | number, unknown>)[key]);
    for (const bad of BAD_VALUES) {
      if (JSON.stringify(bad) === was) continue;
      yield [
        `${where} = ${JSON.stringify(bad)}`,
        tampered(json, (copy) => {
          const target = copy as Record<string | number, unknown>;
          if (bad === undefined && !Array.isArray(copy)) delete target[key];
          else target[key] = bad;
        }),
      ];
    }
    const child = (json as Record<string | number, unknown>)[key];
    for (const [inner, changed] of malformed(child, where)) {
      yield [inner, tampered(json, (copy) => ((copy as Record<string | number, unknown>)[key] = changed))];
    }
  }
}

function rulesOf(server: RunningServer, spec: ChainSpec): (number: bigint, timestamp: bigint) => Common {
  const reader = new ChainReader(server.store, spec);
  return reader.commonAt.bind(reader);
}

/** Slots read in proofs, as 32-byte keys (anvil refuses a short key): LogStore sets 1, 2, 3 and 5. */
const SLOTS: Hex[] = [0n, 1n, 2n, 3n, 5n, 6n, 9n].map((n) => `0x${n.toString(16).padStart(64, '0')}` as Hex);

describe('upstream verification of anvil answers', () => {
  let anvil: Anvil;
  let server: RunningServer;
  let rules: ForkRules;
  const work = tempDir('ethtrace-upstream-');
  /** anvil's answers for blocks 0..head: full blocks, headers alone, receipts. */
  const blocks: Obj[] = [];
  const headers: Obj[] = [];
  const receipts: unknown[] = [];
  /** Accounts whose proofs are checked: dev accounts, contracts, a failed creation's address, a fresh one. */
  const accounts: Hex[] = [];
  /** The basic workload's LogStore: slots 1, 2, 3 and 5 hold values. */
  let logStore: Hex;
  /** Where the basic workload's reverted creation would have put its contract. */
  let failedCreation: Hex;

  before(async () => {
    anvil = await startAnvil();
    const workload = await buildTraceWorkload(anvil);
    const basic = await buildBasicChain(anvil, { failedCreation: true });
    const imported = await importFromAnvil(anvil, work.path);
    server = await startServer(imported.datadir);
    rules = rulesOf(server, readChainSpec(imported.chain.genesisPath));
    const head = Number(await anvil.rpc<Hex>('eth_blockNumber'));
    for (let n = 0; n <= head; n++) {
      const number = `0x${n.toString(16)}`;
      const block = await anvil.rpc<Obj>('eth_getBlockByNumber', [number, true]);
      blocks.push(block);
      headers.push(await anvil.rpc<Obj>('eth_getBlockByHash', [block.hash, false]));
      receipts.push(await anvil.rpc<unknown[]>('eth_getBlockReceipts', [block.hash]));
    }
    logStore = basic.logStore;
    const failed = basic.blocks
      .flatMap((b) => b.receipts)
      .find((r) => r.status === '0x0' && r.contractAddress);
    failedCreation = failed?.contractAddress as Hex;
    assert.ok(failedCreation, 'the basic workload has a reverted creation');
    accounts.push(
      ...devAccounts().map((a) => a.address),
      ...(Object.values(workload.contracts) as Hex[]),
      basic.logStore,
      failedCreation,
      freshAddress('upstream/never-used'),
    );
  });
  after(async () => {
    await server?.close();
    await anvil?.stop();
    work.cleanup();
  });

  const block = (n: number): Obj => blocks[n] as Obj;
  const hashOf = (n: number): Uint8Array => hexToBytes(block(n).hash as Hex);
  /** The first transaction (with its receipt) that passes `test`: its block and index. */
  const find = (test: (tx: Obj, receipt: Obj) => boolean): { n: number; i: number } => {
    for (const [n, b] of blocks.entries()) {
      const i = list(b, 'transactions').findIndex((tx, i) => test(tx as Obj, at(receipts[n], i)));
      if (i >= 0) return { n, i };
    }
    assert.fail('no such transaction in the chain');
  };

  it('covers every envelope anvil mines, creations, logs and reverts', () => {
    const txs = blocks.flatMap((b, n) =>
      list(b, 'transactions').map((tx, i) => ({ tx: tx as Obj, receipt: at(receipts[n], i) })),
    );
    const has = (test: (tx: Obj, receipt: Obj) => boolean) =>
      txs.some(({ tx, receipt }) => test(tx, receipt));
    assert.ok(
      has((tx) => tx.type === '0x0' && (tx.v === '0x1b' || tx.v === '0x1c')),
      'legacy without EIP-155',
    );
    assert.ok(
      has((tx) => tx.type === '0x0' && BigInt(tx.v as Hex) > 28n),
      'legacy with EIP-155',
    );
    for (const type of ['0x1', '0x2', '0x4'])
      assert.ok(
        has((tx) => tx.type === type),
        `type ${type}`,
      );
    assert.ok(
      has((tx) => tx.to === null || tx.to === undefined),
      'a creation',
    );
    assert.ok(
      has((_, r) => (r.logs as unknown[]).length > 0),
      'logs',
    );
    assert.ok(
      has((_, r) => r.status === '0x0'),
      'a revert',
    );
  });

  it('checks every block and its receipts, and renders them as ethtrace serves the imported chain, byte for byte', async () => {
    for (const [n, json] of blocks.entries()) {
      const checked = await blockFromRpc(json, rules, hashOf(n));
      assert.equal(bytesToHex(checked.hash()), json.hash);
      assert.equal(checked.transactions.length, list(json, 'transactions').length);
      const rendered = await receiptsFromRpc(checked, receipts[n]);
      const served = await servedResult(server, 'eth_getBlockReceipts', [json.hash]);
      assert.equal(`[${rendered.json.join(',')}]`, served, `block ${n}`);
      // The consensus encodings are what ethtrace stores and serves raw.
      const raw = await server.rpc<Hex[]>('debug_getRawReceipts', [json.hash]);
      assert.deepEqual(rendered.encoded.map(bytesToHex), raw, `block ${n} raw receipts`);
      // By number too, and per-transaction receipts are the same list.
      await blockFromRpc(json, rules, BigInt(n));
      const single = await Promise.all(
        checked.transactions.map((tx) => anvil.rpc('eth_getTransactionReceipt', [bytesToHex(tx.hash())])),
      );
      assert.deepEqual((await receiptsFromRpc(checked, single)).json, rendered.json);
    }
  });

  it('checks every header alone against its hash', () => {
    for (const [n, json] of headers.entries()) {
      const header = headerFromRpc(json, rules, hashOf(n));
      assert.equal(bytesToHex(header.hash()), json.hash);
      assert.equal(header.number, BigInt(n));
    }
  });

  it("verifies anvil's proofs against its own header state roots (blocks after genesis), absent accounts and zero slots included", async (t) => {
    let absent = 0;
    let zeroSlots = 0;
    let withCode = 0;
    for (let n = 1; n < blocks.length; n++) {
      const stateRoot = hexToBytes(block(n).stateRoot as Hex);
      for (const address of accounts) {
        const proof = await anvil.rpc('eth_getProof', [address, SLOTS, block(n).hash]);
        const code = hexToBytes(await anvil.rpc<Hex>('eth_getCode', [address, block(n).hash]));
        const slots = SLOTS.map((s) => hexToBytes(s));
        const state = accountFromProof(stateRoot, hexToBytes(address), proof, { slots, code });
        const balance = BigInt(await anvil.rpc<Hex>('eth_getBalance', [address, block(n).hash]));
        assert.equal(state.account?.balance ?? 0n, balance);
        if (state.account === null) absent++;
        if (code.length > 0) withCode++;
        for (const [i, slot] of state.storage.entries()) {
          const stored = await anvil.rpc<Hex>('eth_getStorageAt', [address, SLOTS[i], block(n).hash]);
          assert.equal(bytesToHex(slot.value), stored);
          if (BigInt(stored) === 0n) zeroSlots++;
        }
      }
    }
    assert.ok(
      absent > 0 && zeroSlots > 0 && withCode > 0,
      `${absent} absent, ${zeroSlots} zero slots, ${withCode} with code`,
    );
    // A finding, not a rule: anvil keeps the empty account a failed creation leaves (EIP-161 removes
    // it), so its roots are not canonical, though its proofs agree with them.
    const failed = failedCreation;
    const last = block(blocks.length - 1);
    const state = accountFromProof(
      hexToBytes(last.stateRoot as Hex),
      hexToBytes(failed),
      await anvil.rpc('eth_getProof', [failed, [], last.hash]),
    );
    t.diagnostic(
      `failed creation's address ${failed}: ${state.account ? 'an empty account' : 'absent'} in anvil's state`,
    );
  });

  it("fails proofs at anvil's genesis: its header carries the empty-trie root, its state is the alloc's", async () => {
    const genesis = block(0);
    assert.equal(genesis.stateRoot, '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421');
    const address = accounts[0] as Hex;
    const proof = await anvil.rpc('eth_getProof', [address, [], genesis.hash]);
    await failsWith(
      () => accountFromProof(hexToBytes(genesis.stateRoot as Hex), hexToBytes(address), proof),
      /account proof node 0 hashes to 0x[0-9a-f]{64}, not the state root 0x56e81f/,
    );
  });

  describe('catches each altered field', () => {
    it('a header field, and a block that is not the one asked for', async () => {
      const json = block(3);
      await failsWith(
        () =>
          blockFromRpc(
            tampered(json, (b) => (b.gasUsed = '0x1')),
            rules,
          ),
        /^upstream answer failed verification: block 3 \(0x[0-9a-f]{64}\) hash of the header's fields 0x[0-9a-f]{64} is not the answer's hash 0x/,
      );
      await failsWith(
        () =>
          headerFromRpc(
            tampered(headers[3], (h) => (at(h).stateRoot = block(4).stateRoot)),
            rules,
          ),
        /hash of the header's fields/,
      );
      await failsWith(
        () => blockFromRpc(json, rules, hashOf(4)),
        /is not the block asked for: hash 0x[0-9a-f]{64} is not the hash asked for/,
      );
      await failsWith(
        () => blockFromRpc(json, rules, 4n),
        /block 3 .* is not the block asked for: number 0x3 is not the number asked for 0x4/,
      );
      await failsWith(
        () => blockFromRpc(headers[3], rules),
        /transactions\[0\] is a hash, not a transaction object/,
      );
    });

    it("a transaction's field, its sender, and the order of transactions", async () => {
      const { n, i } = find((tx) => tx.type === '0x4');
      const json = block(n);
      await failsWith(
        () =>
          blockFromRpc(
            tampered(json, (b) => (at(b, 'transactions', i).value = '0x1')),
            rules,
          ),
        new RegExp(
          `transaction ${i} hash of the transaction's fields 0x[0-9a-f]{64} is not the answer's hash 0x`,
        ),
      );
      await failsWith(
        () =>
          blockFromRpc(
            tampered(json, (b) => (at(b, 'transactions', i, 'authorizationList', 0).nonce = '0x9')),
            rules,
          ),
        /hash of the transaction's fields/,
      );
      await failsWith(
        () =>
          blockFromRpc(
            tampered(json, (b) => (at(b, 'transactions', i).from = accounts.at(-1))),
            rules,
          ),
        new RegExp(
          `transaction ${i} sender \\(recovered from its signature\\) 0x[0-9a-f]{40} is not the answer's from`,
        ),
      );
      // Two transactions swapped, each still whole and claiming its new place: only the root shows it.
      const many = blocks.findIndex((b) => list(b, 'transactions').length >= 2);
      const swapped = tampered(block(many), (b) => {
        const txs = list(b, 'transactions');
        [txs[0], txs[1]] = [txs[1], txs[0]];
        at(b, 'transactions', 0).transactionIndex = '0x0';
        at(b, 'transactions', 1).transactionIndex = '0x1';
      });
      await failsWith(
        () => blockFromRpc(swapped, rules),
        /transactions root 0x[0-9a-f]{64} is not the header's 0x/,
      );
      await failsWith(
        () =>
          blockFromRpc(
            tampered(block(many), (b) => (at(b, 'transactions', 1).transactionIndex = '0x0')),
            rules,
          ),
        /transactions\[1\]\.transactionIndex 0x0 is not its index in the block 0x1/,
      );
      await failsWith(
        () =>
          blockFromRpc(
            tampered(block(many), (b) => list(b, 'transactions').pop()),
            rules,
          ),
        /transactions root/,
      );
      // A legacy transaction's chainId must be the one its v signs.
      const legacy = find((tx) => tx.type === '0x0' && BigInt(tx.v as Hex) > 28n);
      await failsWith(
        () =>
          blockFromRpc(
            tampered(block(legacy.n), (b) => (at(b, 'transactions', legacy.i).chainId = '0x1')),
            rules,
          ),
        /chainId 0x1 is not the chain id its v encodes 0x7a69/,
      );
      // A typed transaction's yParity and v must agree.
      const typed = find((tx) => tx.type === '0x2');
      await failsWith(
        () =>
          blockFromRpc(
            tampered(block(typed.n), (b) => (at(b, 'transactions', typed.i).v = '0x5')),
            rules,
          ),
        /yParity 0x[01] is not its v 0x5/,
      );
    });

    it('uncles claimed without uncle headers', async () => {
      await failsWith(
        () =>
          blockFromRpc(
            tampered(block(2), (b) => (b.uncles = [block(1).hash])),
            rules,
          ),
        /uncles hash 0x1dcc4de8.* \(1 uncles listed\) is not the empty list's .* no uncle headers were given/,
      );
    });

    it("a receipt's status, a log, the order, a missing receipt", async () => {
      const { n, i } = find((_, r) => r.status === '0x1' && (r.logs as unknown[]).length > 0);
      const checked = await blockFromRpc(block(n), rules);
      const json = receipts[n];
      await failsWith(
        () =>
          receiptsFromRpc(
            checked,
            tampered(json, (r) => (at(r, i).status = '0x0')),
          ),
        new RegExp(`block ${n} \\(0x[0-9a-f]{64}\\) receipts root 0x[0-9a-f]{64} is not the header's 0x`),
      );
      await failsWith(
        () =>
          receiptsFromRpc(
            checked,
            tampered(json, (r) => (at(r, i, 'logs', 0).data = '0x01')),
          ),
        /receipts root/,
      );
      await failsWith(
        () =>
          receiptsFromRpc(
            checked,
            tampered(json, (r) => (at(r, i, 'logs', 0).address = accounts[0])),
          ),
        new RegExp(`receipts\\[${i}\\] logs bloom 0x[0-9a-f]{512} is not the bloom of its logs`),
      );
      await failsWith(
        () =>
          receiptsFromRpc(
            checked,
            tampered(json, (r) => list(r, i, 'logs').pop()),
          ),
        /logs bloom|receipts root|logIndex/,
      );
      await failsWith(
        () =>
          receiptsFromRpc(
            checked,
            tampered(json, (r) => (at(r, i).cumulativeGasUsed = '0x5209')),
          ),
        /receipts root|cumulativeGasUsed/,
      );
      await failsWith(
        () =>
          receiptsFromRpc(
            checked,
            tampered(json, (r) => (at(r, i, 'logs', 0).logIndex = '0x63')),
          ),
        /logIndex 0x63 is not its place among the block's logs/,
      );
      const many = blocks.findIndex((b) => list(b, 'transactions').length >= 2);
      const manyBlock = await blockFromRpc(block(many), rules);
      await failsWith(
        () =>
          receiptsFromRpc(
            manyBlock,
            tampered(receipts[many], (r) => {
              const all = r as unknown[];
              [all[0], all[1]] = [all[1], all[0]];
            }),
          ),
        /receipts\[0\]\.transactionHash 0x[0-9a-f]{64} is not transaction 0's hash 0x/,
      );
      await failsWith(
        () =>
          receiptsFromRpc(
            manyBlock,
            tampered(receipts[many], (r) => (r as unknown[]).pop()),
          ),
        /receipt count \d+ is not its transaction count \d+/,
      );
      await failsWith(
        () =>
          receiptsFromRpc(
            manyBlock,
            tampered(receipts[many], (r) => (at(r, 0).blockHash = `0x${'11'.repeat(32)}`)),
          ),
        /receipts\[0\]\.blockHash 0x[0-9a-f]{64} is not the block's hash/,
      );
      await failsWith(() => receiptsFromRpc(manyBlock, null), /receipts are not a list: null/);
    });

    it("the header's logs bloom and gas used against receipts that match its receipts root", async () => {
      const { n } = find((_, r) => (r.logs as unknown[]).length > 0);
      const genuine = await blockFromRpc(block(n), rules);
      const forge = async (field: number, value: Uint8Array): Promise<Block> => {
        const values = genuine.header.raw();
        values[field] = value;
        const common = genuine.common;
        // biome-ignore lint/suspicious/noExplicitAny: the block decoder takes the nested RLP arrays untyped
        return createBlockFromBytesArray([values, ...genuine.raw().slice(1)] as any, { common });
      };
      const sameReceiptsFor = (forged: Block) =>
        tampered(receipts[n], (r) => {
          for (const receipt of r as Obj[]) {
            receipt.blockHash = bytesToHex(forged.hash());
            for (const log of receipt.logs as Obj[]) log.blockHash = bytesToHex(forged.hash());
          }
        });
      const noBloom = await forge(6, new Uint8Array(256));
      await failsWith(
        () => receiptsFromRpc(noBloom, sameReceiptsFor(noBloom)),
        /receipts' logs bloom 0x[0-9a-f]{512} is not the header's 0x0{512}/,
      );
      const moreGas = await forge(10, bigIntToUnpaddedBytes(genuine.header.gasUsed + 1n));
      await failsWith(
        () => receiptsFromRpc(moreGas, sameReceiptsFor(moreGas)),
        /receipts' gas used 0x[0-9a-f]+ is not the header's 0x/,
      );
    });

    it('a proof node, a balance, a nonce, a storage value, the code', async () => {
      const last = block(blocks.length - 1);
      const stateRoot = hexToBytes(last.stateRoot as Hex);
      const contract = logStore;
      const proof = await anvil.rpc<Obj>('eth_getProof', [contract, SLOTS, last.hash]);
      const code = hexToBytes(await anvil.rpc<Hex>('eth_getCode', [contract, last.hash]));
      const address = hexToBytes(contract);
      const verify = (p: unknown, c: Uint8Array = code) =>
        accountFromProof(stateRoot, address, p, { code: c });
      verify(proof);
      const flip = (hex: Hex): Hex => `${hex.slice(0, -2)}${hex.endsWith('00') ? '01' : '00'}` as Hex;
      await failsWith(
        () =>
          verify(
            tampered(proof, (p) => (list(p, 'accountProof')[1] = flip(list(p, 'accountProof')[1] as Hex))),
          ),
        /account proof node 1 hashes to 0x[0-9a-f]{64}, not the hash account proof node 0 references 0x/,
      );
      await failsWith(
        () =>
          verify(
            tampered(proof, (p) => (list(p, 'accountProof')[0] = flip(list(p, 'accountProof')[0] as Hex))),
          ),
        /account proof node 0 hashes to .*, not the state root/,
      );
      await failsWith(
        () => verify(tampered(proof, (p) => list(p, 'accountProof').pop())),
        /account proof ends after \d+ node\(s\), before its path does/,
      );
      await failsWith(
        () => verify(tampered(proof, (p) => list(p, 'accountProof').push(list(p, 'accountProof')[0]))),
        /account proof has 1 node\(s\) after node \d+, where the path ends/,
      );
      await failsWith(
        () => verify(tampered(proof, (p) => (p.balance = '0xde0b6b3a7640000'))),
        /balance 0xde0b6b3a7640000 is not the proof's 0x/,
      );
      await failsWith(
        () => verify(tampered(proof, (p) => (p.nonce = '0x7'))),
        /nonce 0x7 is not the proof's 0x/,
      );
      await failsWith(
        () => verify(tampered(proof, (p) => (p.storageHash = last.stateRoot))),
        /storageHash 0x[0-9a-f]{64} is not the proof's storage root/,
      );
      const set = list(proof, 'storageProof').findIndex((s) => BigInt((s as Obj).value as Hex) !== 0n);
      assert.ok(set >= 0, 'the contract has a non-zero slot among SLOTS');
      await failsWith(
        () => verify(tampered(proof, (p) => (at(p, 'storageProof', set).value = '0x2a'))),
        /slot 0x0{62}[0-9a-f]{2} value 0x2a is not the storage proof's 0x/,
      );
      await failsWith(
        () =>
          verify(
            tampered(proof, (p) => {
              const nodes = list(p, 'storageProof', set, 'proof');
              nodes[0] = flip(nodes[0] as Hex);
            }),
          ),
        /storage proof of slot 0x[0-9a-f]{64} node 0 hashes to 0x[0-9a-f]{64}, not the account's storage root/,
      );
      await failsWith(
        () => verify(tampered(proof, (p) => (at(p, 'storageProof', set).value = '0x0'))),
        /value 0x0 is not the storage proof's/,
      );
      await failsWith(
        () =>
          accountFromProof(stateRoot, address, proof, {
            slots: [...SLOTS].reverse().map((s) => hexToBytes(s)),
          }),
        /storageProof\[0\]\.key 0x0{64} is not the slot asked for 0x0{63}9/,
      );
      await failsWith(
        () => verify(proof, code.subarray(1)),
        /code hash \(keccak of the code given\) 0x[0-9a-f]{64} is not the proof's code hash/,
      );
      await failsWith(
        () => accountFromProof(stateRoot, hexToBytes(accounts[0] as Hex), proof),
        /address 0x[0-9a-f]{40} is not the address asked for/,
      );
      // An absent account: its proof shows no leaf, so it can claim nothing.
      const fresh = accounts.at(-1) as Hex;
      const absent = await anvil.rpc<Obj>('eth_getProof', [fresh, [SLOTS[1]], last.hash]);
      const none = accountFromProof(stateRoot, hexToBytes(fresh), absent, { code: new Uint8Array() });
      assert.equal(none.account, null);
      await failsWith(
        () =>
          accountFromProof(
            stateRoot,
            hexToBytes(fresh),
            tampered(absent, (p) => (p.balance = '0x1')),
          ),
        /balance 0x1 is not 0 for an account the proof shows absent/,
      );
      await failsWith(
        () => accountFromProof(stateRoot, hexToBytes(fresh), absent, { code }),
        /code hash .* is not the proof's code hash 0xc5d2460186f7/,
      );
      await failsWith(
        () =>
          accountFromProof(
            stateRoot,
            hexToBytes(fresh),
            tampered(absent, (p) => (at(p, 'storageProof', 0).value = '0x1')),
          ),
        /value 0x1 is not the storage proof's 0x0/,
      );
    });
  });

  it('turns every malformed field of a block, its receipts and a proof into Unavailable, never another error', async (t) => {
    // The smallest blocks with a 7702 transaction (nested authorizations) and an access list keep the
    // sweep short; both have logs.
    const smallest = (type: string) =>
      blocks
        .map((b, n) => ({ n, txs: list(b, 'transactions') }))
        .filter(({ txs }) => txs.some((tx) => (tx as Obj).type === type))
        .sort((a, b) => a.txs.length - b.txs.length)[0]?.n as number;
    const picks = new Set([smallest('0x4'), smallest('0x1')]);
    let cases = 0;
    const accepted = new Set<string>();
    const sweep = async (what: string, run: () => unknown) => {
      cases++;
      if (await succeedsOrUnavailable(what, run)) accepted.add(what);
    };
    for (const n of picks) {
      const checked = await blockFromRpc(block(n), rules);
      for (const [what, json] of malformed(block(n)))
        await sweep(`block${what}`, () => blockFromRpc(json, rules));
      for (const [what, json] of malformed(receipts[n])) {
        await sweep(`receipts${what}`, () => receiptsFromRpc(checked, json));
      }
    }
    const last = block(blocks.length - 1);
    const contract = logStore;
    const proof = await anvil.rpc('eth_getProof', [contract, SLOTS.slice(0, 2), last.hash]);
    for (const [what, json] of malformed(proof)) {
      await sweep(`proof${what}`, () =>
        accountFromProof(hexToBytes(last.stateRoot as Hex), hexToBytes(contract), json),
      );
    }
    for (const answer of [null, 'block', 7, [], {}]) {
      await failsWith(() => blockFromRpc(answer, rules), /answer is not a JSON object|is missing/);
      await failsWith(() => headerFromRpc(answer, rules), /answer is not a JSON object|is missing/);
      await failsWith(
        () => accountFromProof(new Uint8Array(32), new Uint8Array(20), answer),
        /answer is not a JSON object|is missing/,
      );
    }
    assert.ok(cases > 1000, `${cases} malformed answers`);
    // What an answer may change and still pass: fields not read (what is served is rendered from
    // checked values), optional fields left out (identity fields, `v` or `yParity` alone, a legacy
    // transaction's chainId, a creation's `to`), fewer proven slots when none were asked for, and a
    // slot key in its other form.
    const mayChange = [
      /^block\.(size|totalDifficulty) = /,
      /^block\.transactions\[\]\.(blockTimestamp|gasPrice) = /,
      /^block\.transactions\[\]\.(blockHash|blockNumber|transactionIndex|chainId|v|yParity|to) = (null|undefined)$/,
      /^receipts\[\]\.(blockTimestamp|blobGasPrice|effectiveGasPrice|from|gasUsed|contractAddress|to) = /,
      /^receipts\[\]\.(blockNumber|type) = (null|undefined)$/,
      /^receipts\[\]\.logs\[\]\.blockTimestamp = /,
      /^receipts\[\]\.logs\[\]\.(blockHash|blockNumber|logIndex|removed|transactionHash|transactionIndex) = (null|undefined)$/,
      /^proof\.storageProof = \[\]$/,
      /^proof\.storageProof\[\]\.key = "0x1"$/,
    ];
    const unexpected = [...accepted]
      .map((what) => what.replace(/\.(\d+)(?=\.| =)/g, '[]'))
      .filter((what) => !mayChange.some((pattern) => pattern.test(what)));
    assert.deepEqual(unexpected, [], 'malformed answers that passed verification');
    t.diagnostic(`${cases} malformed answers, ${accepted.size} passed (each a change allowed above)`);
  });
});

describe('upstream verification of the conformance chain as ethtrace serves it', () => {
  let chain: { datadir: string; cleanup: () => void };
  let server: RunningServer;
  let rules: (number: bigint, timestamp: bigint) => Common;
  let spec: ChainSpec;
  const blocks: Obj[] = [];
  const receipts: unknown[] = [];
  /** Uncle headers of each block, rendered by ethtrace's header renderer from the raw block. */
  const uncles: Obj[][] = [];

  before(async () => {
    chain = await importConformanceChain();
    server = await startServer(chain.datadir);
    spec = readChainSpec(join(CONFORMANCE, 'genesis.json'));
    rules = rulesOf(server, spec);
    const head = Number(await server.rpc<Hex>('eth_blockNumber'));
    for (let n = 0; n <= head; n++) {
      const block = await server.rpc<Obj>('eth_getBlockByNumber', [`0x${n.toString(16)}`, true]);
      blocks.push(block);
      receipts.push(await server.rpc<unknown[]>('eth_getBlockReceipts', [block.hash]));
      const raw = RLP.decode(
        hexToBytes(await server.rpc<Hex>('debug_getRawBlock', [block.hash])),
      ) as unknown as Uint8Array[][][];
      uncles.push(
        (raw[2] ?? []).map((values) => {
          const number = BigInt(bytesToHex(values[8] as Uint8Array));
          const timestamp = BigInt(bytesToHex(values[11] as Uint8Array));
          const header = createBlockHeaderFromBytesArray(values, { common: rules(number, timestamp) });
          return { ...formatHeader(header) } as Obj;
        }),
      );
    }
  });
  after(async () => {
    await server?.close();
    chain?.cleanup();
  });

  const block = (n: number): Obj => blocks[n] as Obj;

  it('checks all 55 blocks from Frontier to Osaka, uncles included, and their receipts byte for byte', async () => {
    assert.equal(blocks.length, 55);
    const seen = { rootReceipts: 0, blobTxs: 0, withdrawals: 0, uncles: 0, types: new Set<string>() };
    for (const [n, json] of blocks.entries()) {
      const checked = await blockFromRpc(json, rules, hexToBytes(json.hash as Hex), uncles[n]);
      assert.equal(checked.uncleHeaders.length, list(json, 'uncles').length);
      const rendered = await receiptsFromRpc(checked, receipts[n]);
      assert.equal(
        `[${rendered.json.join(',')}]`,
        await servedResult(server, 'eth_getBlockReceipts', [json.hash]),
      );
      seen.rootReceipts += rendered.json.filter((r) => r.includes('"root":')).length;
      seen.withdrawals += checked.withdrawals?.length ?? 0;
      seen.uncles += checked.uncleHeaders.length;
      for (const tx of checked.transactions) seen.types.add(String(tx.type));
      seen.blobTxs += checked.transactions.filter((tx) => tx.type === 3).length;
    }
    assert.ok(
      seen.rootReceipts > 0 && seen.blobTxs > 0 && seen.withdrawals > 0 && seen.uncles > 0,
      JSON.stringify({ ...seen, types: [...seen.types] }),
    );
    assert.deepEqual([...seen.types].sort(), ['0', '1', '2', '3', '4']);
  });

  it('verifies proofs of every alloc account, absent accounts and zero slots, with their code', async () => {
    const accounts = [
      ...spec.alloc.map((a) => bytesToHex(a.address)),
      '0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f',
      '0x00000000000000000000000000000000000000ab',
    ] as Hex[];
    const keys = ['0x0', '0x1', '0x02', '0x49a390dda8e68b031d570152e278f436f4024ccc5b983e7ae4f5e0ae861df2a3'];
    let present = 0;
    let absent = 0;
    let nonZero = 0;
    for (const n of [0, 8, 26, 36, 45, blocks.length - 1]) {
      const json = block(n);
      for (const address of accounts) {
        const proof = await server.rpc('eth_getProof', [address, keys, json.hash]);
        const code = hexToBytes(await server.rpc<Hex>('eth_getCode', [address, json.hash]));
        const slots = keys.map((k) => hexToBytes(`0x${k.slice(2).padStart(64, '0')}`));
        const state = accountFromProof(hexToBytes(json.stateRoot as Hex), hexToBytes(address), proof, {
          slots,
          code,
        });
        if (state.account) present++;
        else absent++;
        nonZero += state.storage.filter((s) => s.value.some((b) => b !== 0)).length;
      }
    }
    assert.ok(
      present > 0 && absent > 0 && nonZero > 0,
      `${present} present, ${absent} absent, ${nonZero} set slots`,
    );
  });

  it('rejects withdrawals, uncles, a pre-Byzantium receipt root and a blob hash that were altered', async () => {
    const withWithdrawals = blocks.findIndex(
      (b) => ((b.withdrawals as unknown[] | undefined) ?? []).length > 0,
    );
    await failsWith(
      () =>
        blockFromRpc(
          tampered(block(withWithdrawals), (b) => (at(b, 'withdrawals', 0).amount = '0x1')),
          rules,
        ),
      /withdrawals root 0x[0-9a-f]{64} is not the header's 0x/,
    );
    const withUncles = uncles.map((u, n) => (u.length > 0 ? n : -1)).filter((n) => n >= 0);
    const [first, second] = withUncles as [number, number];
    await failsWith(
      () => blockFromRpc(block(first), rules),
      /uncles hash .* \(1 uncles listed\) is not the empty list's/,
    );
    await failsWith(
      () => blockFromRpc(block(first), rules, undefined, uncles[second]),
      /uncle 0 .* is not the block asked for: hash 0x[0-9a-f]{64} is not the hash asked for/,
    );
    await failsWith(
      () =>
        blockFromRpc(block(first), rules, undefined, [
          tampered(uncles[first]?.[0], (u) => ((u as Obj).gasUsed = '0x1')),
        ]),
      new RegExp(
        `uncle 0 \\d+ \\(0x[0-9a-f]{64}\\) of block ${first} \\(0x[0-9a-f]{64}\\) hash of the header's fields`,
      ),
    );
    await failsWith(
      () => blockFromRpc(block(first), rules, undefined, []),
      /uncle headers given: 0 is not the number of uncles it lists, 1/,
    );
    // The uncles hash itself: the block lists the other block's uncle, whose header then checks out.
    await failsWith(
      () =>
        blockFromRpc(
          tampered(block(first), (b) => (b.uncles = [uncles[second]?.[0]?.hash])),
          rules,
          undefined,
          uncles[second],
        ),
      /uncles hash 0x[0-9a-f]{64} is not the header's 0x/,
    );
    const preByzantium = receipts.findIndex((r, n) => n < 9 && (r as unknown[]).length > 0);
    const early = await blockFromRpc(block(preByzantium), rules);
    await failsWith(
      () =>
        receiptsFromRpc(
          early,
          tampered(receipts[preByzantium], (r) => (at(r, 0).root = block(1).stateRoot)),
        ),
      /receipts root 0x[0-9a-f]{64} is not the header's/,
    );
    const blob = blocks.findIndex((b) => list(b, 'transactions').some((tx) => (tx as Obj).type === '0x3'));
    const i = list(block(blob), 'transactions').findIndex((tx) => (tx as Obj).type === '0x3');
    await failsWith(
      () =>
        blockFromRpc(
          tampered(block(blob), (b) => {
            const hashes = list(b, 'transactions', i, 'blobVersionedHashes');
            hashes[0] = `0x01${'00'.repeat(31)}`;
          }),
          rules,
        ),
      new RegExp(`transaction ${i} hash of the transaction's fields`),
    );
  });

  it('takes one Common for a block of its fork, and refuses one of another fork', async () => {
    const london = block(30);
    const common = rules(BigInt(london.number as Hex), BigInt(london.timestamp as Hex));
    await blockFromRpc(london, common);
    await failsWith(
      () => blockFromRpc(block(2), common),
      /is a .* block by its number and timestamp, but the rules given are arrowGlacier's/,
    );
  });
});

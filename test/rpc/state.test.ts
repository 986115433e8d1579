import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Block } from '@ethereumjs/block';
import { verifyMerkleProof } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { bytesToBigInt, bytesToHex, hexToBytes, KECCAK256_RLP } from '@ethereumjs/util';
import { keccak256 } from '../../src/primitives/keccak.ts';
import { CONFORMANCE } from '../support/cli.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';

const METHODS = [
  'eth_getBalance',
  'eth_getCode',
  'eth_getProof',
  'eth_getStorageAt',
  'eth_getStorageValues',
  'eth_getTransactionCount',
];

const ZERO_HASH = `0x${'00'.repeat(32)}`;
const UNKNOWN_HASH = `0x${'ab'.repeat(32)}`;

interface Answer {
  result?: unknown;
  error?: { code: number; message: string };
}

interface Receipt {
  from: string;
  to: string | null;
  gasUsed: string;
  effectiveGasPrice: string;
  blobGasUsed?: string;
  blobGasPrice?: string;
  status?: string;
}

interface ProofAnswer {
  address: string;
  accountProof: string[];
  balance: string;
  codeHash: string;
  nonce: string;
  storageHash: string;
  storageProof: Array<{ key: string; value: string; proof: string[] }>;
}

/** The request/answer pairs of an execution-apis `.io` file. */
function fixtureExchanges(path: string): Array<{ request: string; response: unknown }> {
  const lines = readFileSync(path, 'utf8').split('\n');
  const out: Array<{ request: string; response: unknown }> = [];
  let request: string | null = null;
  for (const line of lines) {
    if (line.startsWith('>> ')) request = line.slice(3);
    else if (line.startsWith('<< ') && request !== null) {
      out.push({ request, response: JSON.parse(line.slice(3)) });
      request = null;
    }
  }
  return out;
}

const hex = (n: bigint | number) => `0x${n.toString(16)}`;

describe('state reads at any block', () => {
  let server: RunningServer;
  let cleanup = () => {};
  let head: bigint;

  before(async () => {
    const chain = await importConformanceChain();
    cleanup = chain.cleanup;
    server = await startServer(chain.datadir);
    const ref = await server.store.getHead();
    assert.ok(ref);
    head = ref.number;
  });

  after(async () => {
    await server?.close();
    cleanup();
  });

  async function post(body: string): Promise<unknown> {
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    return res.json();
  }

  async function call(method: string, params: unknown[]): Promise<Answer> {
    return (await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))) as Answer;
  }

  async function blockAt(n: bigint): Promise<Block> {
    const block = await server.app.services.chain.blockAt({ kind: 'number', number: n });
    assert.ok(block, `block ${n}`);
    return block;
  }

  const balance = async (a: string, n: bigint) =>
    BigInt(await server.rpc<string>('eth_getBalance', [a, hex(n)]));
  const nonce = async (a: string, n: bigint) =>
    BigInt(await server.rpc<string>('eth_getTransactionCount', [a, hex(n)]));
  const code = (a: string, n: bigint) => server.rpc<string>('eth_getCode', [a, hex(n)]);

  /** The code a call to `a` runs: an EIP-7702 designator (0xef0100 ‖ address) runs its target's. */
  async function runnableCode(a: string, n: bigint): Promise<string> {
    const own = await code(a, n);
    return own.startsWith('0xef0100') && own.length === 2 + 2 * 23 ? code(`0x${own.slice(8)}`, n) : own;
  }

  describe('conformance fixtures', () => {
    for (const method of METHODS) {
      const dir = join(CONFORMANCE, method);
      for (const file of readdirSync(dir).filter((f) => f.endsWith('.io'))) {
        it(`${method}/${file}`, async () => {
          for (const { request, response } of fixtureExchanges(join(dir, file))) {
            assert.deepEqual(await post(request), response);
          }
        });
      }
    }
  });

  it('balances and nonces of every sender and recipient follow each block', async () => {
    let exactNonces = 0;
    let exactBalances = 0;
    let boundedBalances = 0;
    for (let n = 1n; n <= head; n++) {
      const block = await blockAt(n);
      if (block.transactions.length === 0) continue;
      const receipts = await server.rpc<Receipt[]>('eth_getBlockReceipts', [hex(n)]);
      const txs = block.transactions.map((tx, i) => {
        const receipt = receipts[i];
        assert.ok(receipt);
        const fee =
          BigInt(receipt.gasUsed) * BigInt(receipt.effectiveGasPrice) +
          BigInt(receipt.blobGasUsed ?? 0) * BigInt(receipt.blobGasPrice ?? 0);
        // A failed transaction pays its fee but moves no value (pre-Byzantium receipts do not say).
        const value = receipt.status === '0x1' ? tx.value : receipt.status === '0x0' ? 0n : null;
        return { tx, from: tx.getSenderAddress().toString(), to: tx.to?.toString() ?? null, fee, value };
      });
      assert.deepEqual(
        txs.map((t) => t.from),
        receipts.map((r) => r.from),
      );
      // Accounts whose balance the block moves outside its transactions' value and fees.
      const busy = new Set<string>([block.header.coinbase.toString()]);
      for (const w of block.withdrawals ?? []) busy.add(w.address.toString());
      // EIP-7702 authorizations bump the nonces of their authorities and give EOAs code.
      const delegates = block.transactions.some((tx) => tx.type === 4);
      // When no transaction runs code able to send ether, every transfer of the block is a
      // transaction's own value, so balances must change by exactly the sums below.
      let inert = !delegates && txs.every((t) => t.value !== null);
      for (const t of txs) {
        if (!inert) break;
        const codes = t.to
          ? [await runnableCode(t.to, n - 1n), await runnableCode(t.to, n)]
          : [bytesToHex(t.tx.data)];
        inert = !codes.some((c) => movesEther(toBytes(c)));
      }

      const senders = new Set(txs.map((t) => t.from));
      for (const sender of senders) {
        const own = txs.filter((t) => t.from === sender);
        const [before, afterwards] = [await nonce(sender, n - 1n), await nonce(sender, n)];
        // Consensus: a sender's first transaction in a block carries its nonce after the block before.
        assert.equal(own[0]?.tx.nonce, before, `first nonce of ${sender} in block ${n}`);
        assert.ok(afterwards >= before + BigInt(own.length), `nonce of ${sender} after block ${n}`);
        if (!delegates && (await code(sender, n)) === '0x') {
          assert.equal(afterwards, before + BigInt(own.length), `nonce of ${sender} after block ${n}`);
          exactNonces++;
        }
      }

      for (const account of new Set([...senders, ...txs.flatMap((t) => (t.to ? [t.to] : []))])) {
        if (busy.has(account)) continue;
        const spent = txs
          .filter((t) => t.from === account)
          .reduce((sum, t) => sum + (t.value ?? t.tx.value) + t.fee, 0n);
        const received = txs.filter((t) => t.to === account).reduce((sum, t) => sum + (t.value ?? 0n), 0n);
        const [before, afterwards] = [await balance(account, n - 1n), await balance(account, n)];
        const what = `balance of ${account} in block ${n}`;
        if (inert) {
          assert.equal(afterwards - before, received - spent, what);
          exactBalances++;
        } else if (
          !delegates &&
          (await code(account, n - 1n)) === '0x' &&
          (await code(account, n)) === '0x'
        ) {
          // Code elsewhere may pay an account without code, but only its own transactions take from it.
          assert.ok(afterwards >= before - spent, what);
          boundedBalances++;
        }
      }
    }
    // The exact checks must have covered a real part of the chain, or this test proves nothing.
    assert.ok(exactNonces > head / 2n, `exact nonce checks: ${exactNonces}`);
    assert.ok(
      exactBalances > head / 2n,
      `exact balance checks: ${exactBalances}, bounded ${boundedBalances}`,
    );
  });

  it('eth_getProof at every block verifies against the header and agrees with the flat reads', async () => {
    let proofs = 0;
    let absent = 0;
    let nonZeroSlots = 0;
    let slotProofs = 0;
    for (let n = 0n; n <= head; n++) {
      const block = await blockAt(n);
      const stateRoot = block.header.stateRoot;
      const touched = new Set<string>([block.header.coinbase.toString()]);
      for (const tx of block.transactions) {
        touched.add(tx.getSenderAddress().toString());
        if (tx.to) touched.add(tx.to.toString());
      }
      // An address nobody uses proves absence.
      touched.add(bytesToHex(keccak256(new TextEncoder().encode(`absent ${n}`)).subarray(12)));
      for (const address of touched) {
        const accountCode = await code(address, n);
        const slotKeys = accountCode === '0x' ? [] : ['0x0', '0x1', '0x02', ZERO_HASH];
        const p = await server.rpc<ProofAnswer>('eth_getProof', [address, slotKeys, hex(n)]);
        assert.equal(p.address, address.toLowerCase());
        const proven = await verifyMerkleProof(
          hexToBytes(address as `0x${string}`),
          p.accountProof.map(toBytes),
          {
            useKeyHashing: true,
            root: stateRoot,
          },
        );
        proofs++;
        assert.equal(BigInt(p.balance), await balance(address, n));
        assert.equal(BigInt(p.nonce), await nonce(address, n));
        if (proven === null) {
          absent++;
          assert.deepEqual(
            { balance: p.balance, nonce: p.nonce, codeHash: p.codeHash, storageHash: p.storageHash },
            { balance: '0x0', nonce: '0x0', codeHash: ZERO_HASH, storageHash: ZERO_HASH },
          );
        } else {
          const [provenNonce, provenBalance, storageRoot, codeHash] = RLP.decode(proven) as Uint8Array[];
          assert.ok(provenNonce && provenBalance && storageRoot && codeHash);
          assert.equal(BigInt(p.nonce), bytesToBigInt(provenNonce));
          assert.equal(BigInt(p.balance), bytesToBigInt(provenBalance));
          assert.equal(p.storageHash, bytesToHex(storageRoot));
          assert.equal(p.codeHash, bytesToHex(codeHash));
          assert.equal(p.codeHash, bytesToHex(keccak256(toBytes(accountCode))));
        }
        assert.deepEqual(
          p.storageProof.map((s) => s.key),
          slotKeys.map((k) => (k.length === 66 ? k : hex(BigInt(k)))),
        );
        for (const s of p.storageProof) {
          const slot = `0x${BigInt(s.key).toString(16).padStart(64, '0')}`;
          const flat = await server.rpc<string>('eth_getStorageAt', [address, slot, hex(n)]);
          assert.equal(BigInt(s.value), BigInt(flat), `slot ${slot} of ${address} at ${n}`);
          if (p.storageHash === bytesToHex(KECCAK256_RLP) || p.storageHash === ZERO_HASH) {
            assert.deepEqual(s.proof, []);
            assert.equal(s.value, '0x0');
            continue;
          }
          const value = await verifyMerkleProof(toBytes(slot), s.proof.map(toBytes), {
            useKeyHashing: true,
            root: toBytes(p.storageHash),
          });
          slotProofs++;
          assert.equal(value === null ? 0n : bytesToBigInt(RLP.decode(value) as Uint8Array), BigInt(s.value));
          if (s.value !== '0x0') nonZeroSlots++;
        }
      }
    }
    assert.ok(proofs > 100 && absent > 50, `proofs ${proofs}, absent ${absent}`);
    assert.ok(slotProofs > 20 && nonZeroSlots > 10, `slot proofs ${slotProofs}, non-zero ${nonZeroSlots}`);
  });

  it('a proof at an old block differs from the head and still verifies against that block', async () => {
    // A contract whose storage changes over the chain: read its slot 0 across every block.
    const contract = await findChangingSlot();
    const { n, address } = contract;
    const old = await server.rpc<ProofAnswer>('eth_getProof', [address, ['0x0'], hex(n)]);
    const now = await server.rpc<ProofAnswer>('eth_getProof', [address, ['0x0'], 'latest']);
    assert.notEqual(old.storageHash, now.storageHash);
    assert.notDeepEqual(old.accountProof, now.accountProof);
    const header = (await blockAt(n)).header;
    const proven = await verifyMerkleProof(
      hexToBytes(address as `0x${string}`),
      old.accountProof.map(toBytes),
      {
        useKeyHashing: true,
        root: header.stateRoot,
      },
    );
    assert.ok(proven);
    await assert.rejects(
      verifyMerkleProof(hexToBytes(address as `0x${string}`), now.accountProof.map(toBytes), {
        useKeyHashing: true,
        root: header.stateRoot,
      }),
    );
  });

  /** A contract and a block after which its slot 0 differs from the head's. */
  async function findChangingSlot(): Promise<{ address: string; n: bigint }> {
    for (let n = 1n; n < head; n++) {
      for (const tx of (await blockAt(n)).transactions) {
        if (!tx.to) continue;
        const address = tx.to.toString();
        if ((await code(address, n)) === '0x') continue;
        const [then, latest] = await Promise.all([
          server.rpc<string>('eth_getStorageAt', [address, '0x0', hex(n)]),
          server.rpc<string>('eth_getStorageAt', [address, '0x0', 'latest']),
        ]);
        if (then !== latest && BigInt(then) !== 0n) return { address, n };
      }
    }
    assert.fail('no contract with changing storage in the chain');
  }

  it('accepts every block-parameter form and resolves each to the same block', async () => {
    const mid = head / 2n;
    const block = await blockAt(mid);
    const hash = bytesToHex(block.hash());
    const address = (await findChangingSlot()).address;
    const forms: unknown[] = [
      hex(mid),
      hex(mid).toUpperCase().replace('0X', '0x'),
      Number(mid),
      mid.toString(),
      hash,
      { blockNumber: hex(mid) },
      { blockHash: hash },
      { blockHash: hash, requireCanonical: true },
      { blockHash: hash, requireCanonical: false },
    ];
    const reads: Array<[string, unknown[]]> = [
      ['eth_getBalance', [address]],
      ['eth_getTransactionCount', [address]],
      ['eth_getCode', [address]],
      ['eth_getStorageAt', [address, '0x0']],
      ['eth_getStorageValues', [{ [address]: [ZERO_HASH] }]],
      ['eth_getProof', [address, ['0x0']]],
    ];
    for (const [method, args] of reads) {
      const want = await call(method, [...args, hex(mid)]);
      assert.ok(want.result !== undefined, `${method}: ${JSON.stringify(want.error)}`);
      for (const form of forms) {
        assert.deepEqual(await call(method, [...args, form]), want, `${method} at ${JSON.stringify(form)}`);
      }
      const latest = await call(method, [...args, hex(head)]);
      for (const tag of ['latest', 'pending', 'safe', 'finalized']) {
        assert.deepEqual(await call(method, [...args, tag]), latest, `${method} at ${tag}`);
      }
      assert.deepEqual(await call(method, args), latest, `${method} without a block`);
      assert.deepEqual(await call(method, [...args, 'earliest']), await call(method, [...args, '0x0']));
    }
    // The slot really changes between mid-chain and the head, so the block parameter is honoured.
    assert.notDeepEqual(
      await call('eth_getStorageAt', [address, '0x0', hex(mid)]),
      await call('eth_getStorageAt', [address, '0x0', 'latest']),
    );
  });

  it('answers geth errors for blocks that do not exist', async () => {
    const address = `0x${'11'.repeat(20)}`;
    const reads: Array<[string, unknown[]]> = [
      ['eth_getBalance', [address]],
      ['eth_getTransactionCount', [address]],
      ['eth_getCode', [address]],
      ['eth_getStorageAt', [address, '0x0']],
      ['eth_getStorageValues', [{ [address]: [ZERO_HASH] }]],
      ['eth_getProof', [address, ['0x0']]],
    ];
    const past = head + 1n;
    for (const [method, args] of reads) {
      for (const form of [hex(past), Number(past), { blockNumber: hex(past) }]) {
        assert.deepEqual((await call(method, [...args, form])).error, {
          code: -32000,
          message: 'header not found',
        });
      }
      for (const form of [UNKNOWN_HASH, { blockHash: UNKNOWN_HASH }]) {
        assert.deepEqual((await call(method, [...args, form])).error, {
          code: -32000,
          message: 'header for hash not found',
        });
      }
    }
  });

  it('rejects malformed parameters with -32602', async () => {
    const address = `0x${'11'.repeat(20)}`;
    const bad: Array<[string, unknown[], string?]> = [
      ['eth_getBalance', [], 'missing value for required argument 0'],
      [
        'eth_getBalance',
        ['0x1234'],
        'invalid argument 0: hex string has length 4, want 40 for common.Address',
      ],
      ['eth_getBalance', [address, 'newest']],
      ['eth_getBalance', [address, { blockHash: UNKNOWN_HASH, blockNumber: '0x1' }]],
      ['eth_getBalance', [address, 'latest', 1], 'too many arguments, want at most 2'],
      ['eth_getTransactionCount', [42]],
      ['eth_getCode', [address, '0xzz']],
      ['eth_getStorageAt', [address], 'missing value for required argument 1'],
      [
        'eth_getStorageAt',
        [address, 7],
        'invalid argument 1: json: cannot unmarshal number into Go value of type string',
      ],
      ['eth_getStorageAt', [address, '0xabcdefgh'], 'invalid hex in storage key: "0xabcdefgh"'],
      [
        'eth_getStorageAt',
        [address, `0x01${'00'.repeat(32)}`],
        `storage key too long (want at most 32 bytes): "0x01${'00'.repeat(32)}"`,
      ],
      [
        'eth_getProof',
        [address, '0x0'],
        'invalid argument 1: json: cannot unmarshal string into Go value of type []string',
      ],
      ['eth_getProof', [address], 'missing value for required argument 1'],
      ['eth_getProof', [address, ['0x0', '0xasdf']], 'invalid hex in storage key: "0xasdf"'],
      [
        'eth_getProof',
        [address, Array.from({ length: 1025 }, () => '0x0')],
        'too many storage keys requested (max 1024, got 1025)',
      ],
      ['eth_getStorageValues', [{}], 'empty request'],
      ['eth_getStorageValues', [{ [address]: [] }], 'empty request'],
      ['eth_getStorageValues', [{ [address]: ['0x0'] }]],
      ['eth_getStorageValues', [{ '0x12': [ZERO_HASH] }]],
      ['eth_getStorageValues', [[address]]],
    ];
    for (const [method, params, message] of bad) {
      const { error } = await call(method, params);
      assert.equal(
        error?.code,
        -32602,
        `${method} ${JSON.stringify(params).slice(0, 80)}: ${error?.message}`,
      );
      if (message) assert.equal(error.message, message);
    }
    const tooMany = await call('eth_getStorageValues', [
      { [address]: Array.from({ length: 1025 }, (_, i) => `0x${i.toString(16).padStart(64, '0')}`) },
    ]);
    assert.deepEqual(tooMany.error, { code: -38026, message: 'too many slots (max 1024)' });
  });

  it('reads storage keys leniently, as geth does', async () => {
    const { address, n } = await findChangingSlot();
    const want = await server.rpc<string>('eth_getStorageAt', [address, ZERO_HASH, hex(n)]);
    assert.equal(want.length, 66);
    for (const key of ['0x0', '0x', '0', '00', '0X0', `0x${'0'.repeat(63)}`]) {
      assert.equal(await server.rpc<string>('eth_getStorageAt', [address, key, hex(n)]), want, key);
    }
    const proof = await server.rpc<ProofAnswer>('eth_getProof', [
      address,
      ['0x00', ZERO_HASH.toUpperCase().replace('0X', '0x'), '0x'],
      hex(n),
    ]);
    assert.deepEqual(
      proof.storageProof.map((s) => s.key),
      ['0x0', ZERO_HASH, '0x0'],
    );
    assert.ok(proof.storageProof.every((s) => BigInt(s.value) === BigInt(want)));
  });

  it('eth_getStorageValues answers per address, lower-cased and sorted, at the block asked for', async () => {
    const { address, n } = await findChangingSlot();
    const other = `0x${'ff'.repeat(20)}`;
    const slots = [ZERO_HASH, `0x${'00'.repeat(31)}01`];
    const result = await server.rpc<Record<string, string[]>>('eth_getStorageValues', [
      { [other.toUpperCase().replace('0X', '0x')]: [ZERO_HASH], [address]: slots },
      hex(n),
    ]);
    assert.deepEqual(Object.keys(result), [address.toLowerCase(), other].sort());
    const want = await Promise.all(
      slots.map((slot) => server.rpc<string>('eth_getStorageAt', [address, slot, hex(n)])),
    );
    assert.deepEqual(result[address.toLowerCase()], want);
    assert.deepEqual(result[other], [ZERO_HASH]);
  });
});

function toBytes(hexString: string): Uint8Array {
  return hexToBytes(hexString as `0x${string}`);
}

// CREATE, CALL, CALLCODE, DELEGATECALL, CREATE2, SELFDESTRUCT: the opcodes through which code can
// move ether (DELEGATECALL by running other code that may).
const ETHER_MOVING_OPS = new Set([0xf0, 0xf1, 0xf2, 0xf4, 0xf5, 0xff]);
const PUSH1 = 0x60;
const PUSH32 = 0x7f;

/** Whether EVM code contains an opcode that can move ether (push data skipped). */
function movesEther(code: Uint8Array): boolean {
  for (let pc = 0; pc < code.length; pc++) {
    const op = code[pc] ?? 0;
    if (ETHER_MOVING_OPS.has(op)) return true;
    if (op >= PUSH1 && op <= PUSH32) pc += op - PUSH1 + 1;
  }
  return false;
}

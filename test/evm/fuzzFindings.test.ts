// What the differential fuzzer (test/fuzz/evm.test.ts) found wrong in src/evm, each reduced to a
// transaction: what geth does is asserted on our EVM, and the same case runs on @ethereumjs/vm
// through the fuzzer's runner, which must find no difference but the ones it knows.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ForkName } from '../../src/evm/forks.ts';
import { forkRules } from '../../src/evm/forks.ts';
import type { FrameEnd } from '../../src/evm/hooks.ts';
import { createAddress } from '../../src/evm/interpreter.ts';
import { precompilesFor } from '../../src/evm/precompiles/index.ts';
import { type AccountChange, EMPTY_CODE_HASH, type StateReader, WorldState } from '../../src/evm/state.ts';
import { applyTransaction } from '../../src/evm/transaction.ts';
import { keccak256 } from '../../src/primitives/keccak.ts';
import { runCase } from '../fuzz/evmDiff.ts';
import { type FuzzAccount, type FuzzCase, type FuzzTx, KEY_ADDRESSES } from '../fuzz/evmGen.ts';

const SENDER = KEY_ADDRESSES[0] as bigint;
const CONTRACT = 0xc0de00n;
const COINBASE = 0xc01bn;
const NOBODY = 0xabcdefn;

function account(address: bigint, code: number[] = [], balance = 10n ** 18n): FuzzAccount {
  return {
    address,
    nonce: address === SENDER ? 0n : 1n,
    balance,
    code: Uint8Array.from(code),
    storage: new Map(),
  };
}

function tx(fields: Partial<FuzzTx>): FuzzTx {
  return {
    type: 0,
    sender: 0,
    nonceDelta: 0n,
    to: CONTRACT,
    value: 0n,
    gasLimit: 200_000n,
    data: new Uint8Array(0),
    gasPrice: 0n,
    maxFeePerGas: 0n,
    maxPriorityFeePerGas: 0n,
    accessList: [],
    blobVersionedHashes: [],
    maxFeePerBlobGas: 0n,
    authorizations: [],
    ...fields,
  };
}

function fuzzCase(fork: ForkName, accounts: FuzzAccount[], t: FuzzTx): FuzzCase {
  return {
    index: 0,
    fork,
    block: {
      number: 1000n,
      timestamp: 1_700_000_000n,
      coinbase: COINBASE,
      gasLimit: 30_000_000n,
      difficulty: 131072n,
      prevRandao: 0n,
      baseFee: 0n,
      excessBlobGas: 0n,
    },
    accounts,
    txs: [t],
  };
}

/** Runs the case's transactions on src/evm, in one world: what changed, and the frames' ends. */
function ours(c: FuzzCase): { changes: AccountChange[]; ends: FrameEnd[] } {
  const pre = new Map(c.accounts.map((a) => [a.address, a]));
  const reader: StateReader = {
    account: (address) => {
      const a = pre.get(address);
      if (!a) return null;
      const codeHash = a.code.length === 0 ? EMPTY_CODE_HASH : keccak256(a.code);
      return { nonce: a.nonce, balance: a.balance, codeHash, hasStorage: a.storage.size > 0 };
    },
    code: (_hash, address) => pre.get(address)?.code ?? new Uint8Array(0),
    storage: (address, slot) => pre.get(address)?.storage.get(slot) ?? 0n,
  };
  const rules = forkRules(c.fork);
  const world = new WorldState(reader);
  const ends: FrameEnd[] = [];
  for (const [nonce, t] of c.txs.entries()) {
    applyTransaction(
      world,
      { ...c.block, chainId: 1n, blockHash: () => 0n },
      rules,
      precompilesFor(rules.precompiles),
      {
        type: t.type,
        sender: SENDER,
        nonce: BigInt(nonce),
        gasLimit: t.gasLimit,
        gasPrice: t.gasPrice,
        maxFeePerGas: 0n,
        maxPriorityFeePerGas: 0n,
        to: t.to,
        value: t.value,
        data: t.data,
        accessList: t.accessList,
        blobVersionedHashes: [],
        maxFeePerBlobGas: 0n,
        authorizationList: [],
      },
      { frameEnd: (e) => ends.push(e) },
    );
  }
  return { changes: world.takeChanges(), ends };
}

async function agreesWithEthereumjs(c: FuzzCase): Promise<void> {
  const report = await runCase(c);
  assert.deepEqual(report.differences, []);
}

describe('fuzz findings: a credit of nothing to an absent account', () => {
  // geth's AddBalance makes the account whatever the amount; before EIP-161 nothing deletes it.
  const stop = [0x00];
  it('creates the coinbase of a zero-fee transaction before Spurious Dragon', async () => {
    for (const fork of ['Frontier', 'Homestead', 'EIP150'] as const) {
      const c = fuzzCase(fork, [account(SENDER), account(CONTRACT, stop)], tx({ gasPrice: 0n }));
      const coinbase = ours(c).changes.find((x) => x.address === COINBASE);
      assert.ok(coinbase?.account, `${fork}: the coinbase exists`);
      assert.equal(coinbase.account.balance, 0n);
      await agreesWithEthereumjs(c);
    }
  });

  it('leaves no account after EIP-161 (touched and empty, it is deleted)', async () => {
    const c = fuzzCase('EIP158', [account(SENDER), account(CONTRACT, stop)], tx({ gasPrice: 0n }));
    const coinbase = ours(c).changes.find((x) => x.address === COINBASE);
    assert.ok(coinbase === undefined || coinbase.account === null);
    await agreesWithEthereumjs(c);
  });

  it('creates the beneficiary of a self-destruct with nothing to send (Homestead)', async () => {
    // PUSH3 NOBODY SELFDESTRUCT, from a contract with no balance.
    const code = [0x62, 0xab, 0xcd, 0xef, 0xff];
    const c = fuzzCase('Homestead', [account(SENDER), account(CONTRACT, code, 0n)], tx({ gasPrice: 1n }));
    const heir = ours(c).changes.find((x) => x.address === NOBODY);
    assert.ok(heir?.account, 'the beneficiary exists');
    await agreesWithEthereumjs(c);
  });
});

describe('fuzz findings: Frontier creation that cannot pay for its code', () => {
  it('keeps the account and the gas, and tells tracers the code store ran out of gas (as geth)', async () => {
    // Initcode returning 0x100 bytes of memory: 51,200 gas of deposit the creation cannot pay.
    const initCode = Uint8Array.of(0x61, 0x01, 0x00, 0x60, 0x00, 0xf3);
    const c = fuzzCase('Frontier', [account(SENDER)], tx({ to: null, data: initCode, gasLimit: 60_000n }));
    const { changes, ends } = ours(c);
    const end = ends[ends.length - 1];
    assert.equal(end?.error, 'code store out of gas');
    assert.equal(end?.output.length, 0x100, 'geth returns the code that was not stored');
    const created = changes.find((x) => x.address === createAddress(SENDER, 0n));
    assert.ok(created?.account, 'the account stays');
    assert.deepEqual(created.account.codeHash, EMPTY_CODE_HASH);
    await agreesWithEthereumjs(c);
  });
});

describe('fuzz findings: precompiles stay warm in every transaction', () => {
  it('after an access list of an earlier transaction named a slot of one (EIP-2929)', async () => {
    // GAS, STATICCALL identity (0x04) with no input, POP, GAS, SWAP1, SUB, PUSH1 0, SSTORE: the gas the
    // call took lands in slot 0, warm (100) in every transaction, whatever came before.
    const code = [
      0x5a, 0x60, 0, 0x60, 0, 0x60, 0, 0x60, 0, 0x60, 4, 0x5a, 0xfa, 0x50, 0x5a, 0x90, 0x03, 0x60, 0, 0x55,
    ];
    const contract = account(CONTRACT, code);
    const warming = tx({ type: 1, to: NOBODY, accessList: [{ address: 4n, storageKeys: [0n] }] });
    const alone = ours(fuzzCase('Berlin', [account(SENDER), contract], tx({ type: 1 })));
    const after = ours({
      ...fuzzCase('Berlin', [account(SENDER), contract], warming),
      txs: [warming, tx({ type: 1 })],
    });
    const slot0 = (r: ReturnType<typeof ours>) =>
      r.changes.find((x) => x.address === CONTRACT)?.slots.get(0n);
    assert.ok(slot0(alone) !== undefined);
    assert.equal(slot0(after), slot0(alone));
    await agreesWithEthereumjs({
      ...fuzzCase('Berlin', [account(SENDER), contract], warming),
      txs: [warming, tx({ type: 1 })],
    });
  });
});

describe('fuzz findings: the vmTrace cost of a failing op on a precompile nothing read yet', () => {
  it('prices the access as warm (precompiles are warm from the start of the transaction)', async () => {
    // PUSH1 1 PUSH1 0x1f PUSH2 0x200 PUSH1 4 EXTCODECOPY: a byte of identity's (empty) code copied to
    // 0x200, with 100 gas left at the EXTCODECOPY: 100 warm + 51 memory (17 words) + 3 copy is more,
    // so it fails; nothing has loaded 0x04 when it does.
    const code = [0x60, 1, 0x60, 0x1f, 0x61, 0x02, 0x00, 0x60, 4, 0x3c];
    const c = fuzzCase('Berlin', [account(SENDER), account(CONTRACT, code)], tx({ type: 1 }));
    const intrinsic = 21_000n;
    const upToTheOp = 4n * 3n;
    c.txs = [tx({ type: 1, gasLimit: intrinsic + upToTheOp + 100n })];
    const costs: string[] = [];
    const report = await runCase(c, (_tx, o) => {
      costs.push(
        ...[...o.vmTrace.matchAll(/"cost":(\d+),"ex":null,"pc":9,"sub":null,"op":"EXTCODECOPY"/g)].map(
          (m) => m[1] ?? '',
        ),
      );
    });
    assert.deepEqual(costs, ['154']);
    assert.deepEqual(report.differences, []);
  });
});

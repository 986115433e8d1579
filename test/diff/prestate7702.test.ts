import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type Address,
  getAddress,
  type Hex,
  hexToBigInt,
  numberToHex,
  parseEther,
  size,
  slice,
  zeroAddress,
} from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { readChainSpec } from '../../src/chain/genesis.ts';
import { importChain } from '../../src/ingest/importer.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { type Anvil, mineBlock, startAnvil } from '../support/anvil.ts';
import { tempDir } from '../support/cli.ts';
import { devAccount } from '../support/devAccounts.ts';
import { exportChain } from '../support/exportChain.ts';
import { act, PROBE_INITCODE, program } from '../support/probe.ts';
import { type RunningServer, startServer } from '../support/server.ts';
import { TxFactory, type TxSpec } from '../support/workload.ts';

/**
 * prestateTracer on EIP-7702 accounts (issue 19, item 5), against anvil as the oracle: a chain built
 * on anvil of type-4 transactions that delegate and call, then calls and ETH transfers into the
 * delegated EOAs, a delegate that calls another delegated EOA, a re-delegation and a revocation, is
 * imported into ethtrace, and both servers' debug_traceTransaction and debug_traceBlockByNumber
 * answers (default and diffMode) must be equal once anvil's deviations from geth are applied to its
 * answer (docs/tracing.md, "prestateTracer and EIP-7702"):
 *
 * - P1: anvil lists the delegate whose code ran for the transaction's recipient; geth lists the
 *   delegate the recipient had when the transaction started (eth/tracers/native/prestate.go,
 *   OnTxStart, and its fixture testdata/prestate_tracer/setcode_tx.json: a freshly delegated
 *   recipient's delegate is not listed). So where the transaction's own authorization (re)delegates
 *   its recipient, the new delegate goes and the old one, as it was at the parent block, comes in.
 * - P2: anvil leaves `code` out of diffMode's post for an account whose delegation was revoked; geth
 *   prints `"code": "0x"` (testdata/prestate_tracer_with_diff_mode/eip7702_deauth.json).
 *
 * The delegates of accounts named by CALL-family ops, and of recipients delegated before the
 * transaction, are listed by both (geth: the OnOpcode and OnTxStart lookups).
 */

const CALL_GAS = 1_000_000n;
const DEPLOY_GAS = 600_000n;

type Account = { balance?: string; nonce?: number; code?: string; storage?: Record<string, string> };
type Prestate = Record<string, Account>;
type Diff = { pre: Prestate; post: Prestate };
type Traced<T> = Array<{ txHash: Hex; result: T }>;

interface Planned {
  label: string;
  spec: TxSpec;
}

interface MinedTx {
  label: string;
  hash: Hex;
  block: bigint;
  spec: TxSpec;
}

const lower = (a: Address): string => a.toLowerCase();

/** An EIP-7702 designator's delegate, or null. */
function delegateOf(code: Hex): string | null {
  return size(code) === 23 && code.toLowerCase().startsWith('0xef0100') ? slice(code, 3).toLowerCase() : null;
}

describe('prestateTracer on EIP-7702 accounts, against anvil', () => {
  let anvil: Anvil;
  let server: RunningServer;
  const work = tempDir('ethtrace-prestate7702-');
  const txs: MinedTx[] = [];
  const blocks: bigint[] = [];
  // Probes (test/support/probe.ts) as delegates, and EOAs that delegate to them.
  let p1: Address;
  let p2: Address;
  let p3: Address;
  const alice = devAccount(8);
  const bob = devAccount(9);
  const carol = devAccount(7);
  const dave = devAccount(6);

  before(async () => {
    anvil = await startAnvil();
    const f = new TxFactory(anvil);
    const deployer = devAccount(0);
    const deployed = await mineBlock(anvil, [
      await f.sign({ type: 'eip1559', from: deployer, data: PROBE_INITCODE, gas: DEPLOY_GAS }),
      await f.sign({ type: 'eip1559', from: deployer, data: PROBE_INITCODE, gas: DEPLOY_GAS }),
      await f.sign({ type: 'eip1559', from: deployer, data: PROBE_INITCODE, gas: DEPLOY_GAS }),
    ]);
    const created = (i: number): Address => getAddress(deployed.receipts[i]?.contractAddress ?? zeroAddress);
    [p1, p2, p3] = [created(0), created(1), created(2)];
    const mine = async (planned: Planned[]) => {
      const raw: Hex[] = [];
      // One after another: a sender's (and an authority's) nonces follow the order of signing.
      for (const p of planned) raw.push(await f.sign(p.spec));
      const block = await mineBlock(anvil, raw);
      blocks.push(block.number);
      for (const [i, p] of planned.entries()) {
        const hash = block.receipts[i]?.transactionHash as Hex;
        txs.push({ label: p.label, hash, block: block.number, spec: p.spec });
      }
    };
    const delegator = devAccount(5);
    await mine([
      {
        label: 'delegate and call',
        spec: {
          type: 'eip7702',
          from: delegator,
          to: alice.address,
          data: program(act.sstore(1, 7), act.call(p2, act.sstore(3, 3))),
          gas: CALL_GAS,
          delegations: [{ authority: alice, contract: p1 }],
        },
      },
    ]);
    await mine([
      {
        label: 'call into a delegated EOA',
        spec: {
          type: 'eip1559',
          from: devAccount(1),
          to: alice.address,
          data: program(act.sstore(2, 8), act.call(p3, act.log([]))),
          gas: CALL_GAS,
        },
      },
      {
        label: 'ETH transfer into a delegated EOA',
        spec: {
          type: 'legacy',
          eip155: true,
          from: devAccount(2),
          to: alice.address,
          value: parseEther('1'),
          gas: 100_000n,
        },
      },
      {
        label: 'contract calls, static-calls and delegate-calls a delegated EOA',
        spec: {
          type: 'eip1559',
          from: devAccount(3),
          to: p2,
          value: 10n,
          data: program(
            act.call(alice.address, act.sstore(4, 4), { value: 5n }),
            act.staticcall(alice.address, act.ret('0x07')),
            act.delegatecall(alice.address, act.log([])),
          ),
          gas: CALL_GAS,
        },
      },
      {
        label: 'authorization for an account nobody calls',
        spec: {
          type: 'eip7702',
          from: devAccount(4),
          to: p3,
          data: act.log([]),
          gas: CALL_GAS,
          delegations: [{ authority: dave, contract: p1 }],
        },
      },
    ]);
    await mine([
      {
        // geth's setcode_tx.json: the recipient's new delegate calls an account delegated in the same
        // transaction; the call names it, so its delegate is listed, the recipient's is not.
        label: 'delegate to a contract that calls another delegated EOA',
        spec: {
          type: 'eip7702',
          from: delegator,
          to: bob.address,
          data: program(act.call(carol.address, act.sstore(5, 5)), act.sstore(6, 6)),
          gas: CALL_GAS,
          delegations: [
            { authority: bob, contract: p2 },
            { authority: carol, contract: p3 },
          ],
        },
      },
    ]);
    await mine([
      {
        label: 're-delegate and call',
        spec: {
          type: 'eip7702',
          from: delegator,
          to: alice.address,
          data: program(act.sstore(7, 7)),
          gas: CALL_GAS,
          delegations: [{ authority: alice, contract: p2 }],
        },
      },
    ]);
    await mine([
      {
        label: 'revoke and send ETH',
        spec: {
          type: 'eip7702',
          from: delegator,
          to: alice.address,
          value: 7n,
          gas: CALL_GAS,
          delegations: [{ authority: alice, contract: zeroAddress }],
        },
      },
      {
        label: 'ETH transfer into a revoked EOA',
        spec: { type: 'eip1559', from: devAccount(2), to: alice.address, value: 9n, gas: 100_000n },
      },
      {
        label: 'call with ETH into an EOA delegated in an earlier block',
        spec: {
          type: 'eip1559',
          from: devAccount(1),
          to: bob.address,
          value: 9n,
          data: act.log([]),
          gas: CALL_GAS,
        },
      },
    ]);
    const chain = await exportChain(anvil, join(work.path, 'anvil'));
    const datadir = join(work.path, 'data');
    const store = await openLmdbStore(datadir);
    try {
      await importChain({
        store,
        spec: readChainSpec(chain.genesisPath),
        files: [chain.rlpPath],
        verifyStateRoot: false,
      });
    } finally {
      await store.close();
    }
    // A generous deadline: the first replay also starts the worker, on a machine that may be busy.
    server = await startServer(datadir, { limits: { pool: { deadlineMs: 60_000 } } });
  });

  after(async () => {
    await server?.close();
    await anvil?.stop();
    work.cleanup();
  });

  const hex = (n: bigint) => numberToHex(n);

  /** An account as the prestate tracer prints it, from anvil's own state at `block`. */
  async function accountAt(address: string, block: bigint): Promise<Account> {
    const at = hex(block);
    const [balance, nonce, code] = await Promise.all([
      anvil.rpc<Hex>('eth_getBalance', [address, at]),
      anvil.rpc<Hex>('eth_getTransactionCount', [address, at]),
      anvil.rpc<Hex>('eth_getCode', [address, at]),
    ]);
    const account: Account = { balance: hex(hexToBigInt(balance)) };
    if (code !== '0x') account.code = code;
    if (hexToBigInt(nonce) > 0n) account.nonce = Number(hexToBigInt(nonce));
    return account;
  }

  /** The delegate a transaction's own authorization gives its recipient, if it has one. */
  function newDelegate(tx: MinedTx): string | null {
    if (tx.spec.type !== 'eip7702') return null;
    const to = lower(tx.spec.to);
    const mine = tx.spec.delegations.filter((d) => lower(d.authority.address) === to).at(-1);
    return mine ? lower(mine.contract) : null;
  }

  /** Rule P1 on anvil's default-mode answer for one transaction. */
  async function normalisePrestate(tx: MinedTx, theirs: Prestate): Promise<Prestate> {
    const fresh = newDelegate(tx);
    if (fresh === null || tx.spec.to === undefined) return theirs;
    const out = { ...theirs };
    // A revocation (delegate zero) runs no delegate; the zero address is this chain's coinbase.
    if (fresh !== zeroAddress) delete out[fresh];
    const old = delegateOf(await anvil.rpc<Hex>('eth_getCode', [tx.spec.to, hex(tx.block - 1n)]));
    if (old !== null) out[old] = await accountAt(old, tx.block - 1n);
    return out;
  }

  /** Rule P2 on anvil's diffMode answer for one transaction. */
  async function normaliseDiff(tx: MinedTx, theirs: Diff): Promise<Diff> {
    const post: Prestate = {};
    for (const [address, account] of Object.entries(theirs.post)) {
      const revoked =
        theirs.pre[address]?.code !== undefined &&
        account.code === undefined &&
        (await anvil.rpc<Hex>('eth_getCode', [address, hex(tx.block)])) === '0x';
      post[address] = revoked ? { ...account, code: '0x' } : account;
    }
    return { pre: theirs.pre, post };
  }

  const byLabel = (label: string): MinedTx => {
    const tx = txs.find((t) => t.label === label);
    assert.ok(tx, label);
    return tx;
  };
  const traceTx = <T>(on: Anvil | RunningServer, tx: MinedTx, diffMode: boolean) =>
    on.rpc<T>('debug_traceTransaction', [tx.hash, { tracer: 'prestateTracer', tracerConfig: { diffMode } }]);

  it('answers debug_traceTransaction (default mode) as anvil does, but for the recipient geth looks up', async () => {
    for (const tx of txs) {
      const ours = await traceTx<Prestate>(server, tx, false);
      const theirs = await normalisePrestate(tx, await traceTx<Prestate>(anvil, tx, false));
      assert.deepEqual(ours, theirs, tx.label);
    }
  });

  it('answers debug_traceTransaction in diffMode as anvil does, with geth’s "0x" for revoked code', async () => {
    for (const tx of txs) {
      const ours = await traceTx<Diff>(server, tx, true);
      const theirs = await normaliseDiff(tx, await traceTx<Diff>(anvil, tx, true));
      assert.deepEqual(ours, theirs, tx.label);
    }
  });

  it('answers debug_traceBlockByNumber in both modes as its transactions do', async () => {
    for (const number of blocks) {
      for (const diffMode of [false, true]) {
        const config = { tracer: 'prestateTracer', tracerConfig: { diffMode } };
        const [ours, theirs] = await Promise.all([
          server.rpc<Traced<Prestate | Diff>>('debug_traceBlockByNumber', [hex(number), config]),
          anvil.rpc<Traced<Prestate | Diff>>('debug_traceBlockByNumber', [hex(number), config]),
        ]);
        assert.equal(ours.length, theirs.length);
        for (const [i, entry] of theirs.entries()) {
          const tx = txs.find((t) => t.hash === entry.txHash);
          assert.ok(tx, entry.txHash);
          const expected = diffMode
            ? await normaliseDiff(tx, entry.result as Diff)
            : await normalisePrestate(tx, entry.result as Prestate);
          assert.deepEqual(
            ours[i],
            { txHash: entry.txHash, result: expected },
            `${tx.label} (diffMode ${diffMode})`,
          );
        }
      }
    }
  });

  it('lists the delegate of a recipient delegated before the transaction, and of each account a call names', async () => {
    const code = await anvil.rpc<Hex>('eth_getCode', [p1, 'latest']);
    for (const label of [
      'call into a delegated EOA',
      'ETH transfer into a delegated EOA',
      'contract calls, static-calls and delegate-calls a delegated EOA',
    ]) {
      const ours = await traceTx<Prestate>(server, byLabel(label), false);
      assert.equal(ours[lower(p1)]?.code, code, label);
    }
    const nested = await traceTx<Prestate>(
      server,
      byLabel('delegate to a contract that calls another delegated EOA'),
      false,
    );
    assert.ok(nested[lower(p3)], "carol's delegate: the CALL names her");
    assert.ok(nested[lower(carol.address)]);
    assert.equal(nested[lower(p2)], undefined, "bob's new delegate: geth reads bob's code before it is set");
    const redelegated = await traceTx<Prestate>(server, byLabel('re-delegate and call'), false);
    assert.ok(redelegated[lower(p1)], 'the delegate alice had');
    assert.equal(redelegated[lower(p2)], undefined);
    const revoked = await traceTx<Diff>(server, byLabel('revoke and send ETH'), true);
    assert.equal(revoked.post[lower(alice.address)]?.code, '0x');
    assert.equal(delegateOf(revoked.pre[lower(alice.address)]?.code as Hex), lower(p2));
  });

  it('lists the authorities of a debug_traceCall, as of a mined transaction', async () => {
    const erin = devAccount(4);
    const frank: PrivateKeyAccount = devAccount(3);
    const nonce = Number(await anvil.rpc<Hex>('eth_getTransactionCount', [frank.address, 'latest']));
    const auth = await frank.signAuthorization({ chainId: anvil.genesis.config.chainId, address: p1, nonce });
    const call = {
      from: erin.address,
      to: p3,
      gas: hex(CALL_GAS),
      input: act.log([]),
      authorizationList: [
        {
          chainId: hex(BigInt(auth.chainId)),
          address: auth.address,
          nonce: hex(BigInt(auth.nonce)),
          yParity: hex(BigInt(auth.yParity ?? 0)),
          r: auth.r,
          s: auth.s,
        },
      ],
    };
    for (const diffMode of [false, true]) {
      const params = [call, 'latest', { tracer: 'prestateTracer', tracerConfig: { diffMode } }];
      const ours = await server.rpc<Prestate | Diff>('debug_traceCall', params);
      const theirs = await anvil.rpc<Prestate | Diff>('debug_traceCall', params);
      const listed = diffMode ? (ours as Diff).pre : (ours as Prestate);
      assert.ok(listed[lower(frank.address)], 'the authority');
      assert.deepEqual(ours, theirs, `diffMode ${diffMode}`);
    }
  });
});

/*
 * Copied from test/support/workload.ts for scripts/answers: it imports anvil.ts and genesis.ts (and through them src/); buildBigBlock left out. The answers tool must not load
 * src/ (the code it compares), so it carries its own copy; keep it in step with the original.
 */
import {
  type AccessList,
  type Address,
  getAddress,
  type Hex,
  keccak256,
  numberToHex,
  parseEther,
  parseGwei,
  type SignedAuthorization,
  slice,
  stringToHex,
  zeroHash,
} from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { LOG_STORE_INITCODE, logStoreCalldata } from '../../../test/support/contracts.ts';
import { devAccount } from '../../../test/support/devAccounts.ts';
import { type Anvil, type MinedBlock, mineBlock, type TxOutcome } from './anvil.ts';
import { isActive } from './genesis.ts';

/**
 * Workloads: chains of real, offline-signed transactions mined into anvil. Every field of every
 * transaction (nonce, gas, fees) is fixed here rather than estimated by anvil, and `mineBlock`
 * spaces timestamps by one slot, so the same workload on the same genesis gives the same block
 * hashes on every run; a failing comparison can then be re-run and inspected.
 */

/**
 * Fixed fees. The base fee starts at 1 gwei and only falls while blocks stay under half full (all
 * of these do), so 10 gwei always clears it. Legacy and 2930 transactions pay 10 gwei, 1559 and
 * 7702 ones the base fee plus 1 gwei, so receipts show both pricing rules.
 */
const GAS_PRICE = parseGwei('10');
const MAX_FEE_PER_GAS = parseGwei('10');
const MAX_PRIORITY_FEE_PER_GAS = parseGwei('1');

/** Gas limits: generous upper bounds, well under EIP-7825's 2^24 cap. */
const TRANSFER_GAS = 21_000n;
const ACCESS_LIST_TRANSFER_GAS = 30_000n;
const DEPLOY_GAS = 200_000n;
const CALL_GAS = 100_000n;
const DELEGATION_GAS = 200_000n;
/** Covers the intrinsic cost of a LogStore call (and EIP-7623's floor) but not its first SSTORE. */
const OUT_OF_GAS_CALL_GAS = 30_000n;

interface TxBase {
  from: PrivateKeyAccount;
  /** Absent for a contract creation. */
  to?: Address;
  value?: bigint;
  data?: Hex;
  gas: bigint;
}

interface Delegation {
  authority: PrivateKeyAccount;
  contract: Address;
}

/** The transaction envelopes a workload can ask for, with only the choices that matter to it. */
export type TxSpec =
  | (TxBase & { type: 'legacy'; eip155: boolean })
  | (TxBase & { type: 'eip2930'; accessList: AccessList })
  | (TxBase & { type: 'eip1559'; accessList?: AccessList })
  | (TxBase & { type: 'eip7702'; to: Address; delegations: Delegation[] });

/** Signs transactions with locally tracked nonces, so a whole block can be signed before any is sent. */
export class TxFactory {
  private readonly nonces = new Map<Address, Promise<number>>();

  constructor(
    private readonly anvil: Anvil,
    readonly chainId = anvil.genesis.config.chainId,
  ) {}

  async sign(spec: TxSpec): Promise<Hex> {
    const base = {
      // Taken before any authorization's, so a sender delegating itself signs nonce + 1 for it.
      nonce: await this.takeNonce(spec.from.address),
      gas: spec.gas,
      to: spec.to ?? null,
      value: spec.value ?? 0n,
      data: spec.data ?? '0x',
    };
    const fees = { maxFeePerGas: MAX_FEE_PER_GAS, maxPriorityFeePerGas: MAX_PRIORITY_FEE_PER_GAS };
    const { chainId } = this;
    switch (spec.type) {
      case 'legacy':
        return spec.from.signTransaction(
          spec.eip155
            ? { ...base, type: 'legacy', gasPrice: GAS_PRICE, chainId }
            : { ...base, type: 'legacy', gasPrice: GAS_PRICE },
        );
      case 'eip2930':
        return spec.from.signTransaction({
          ...base,
          type: 'eip2930',
          chainId,
          gasPrice: GAS_PRICE,
          accessList: spec.accessList,
        });
      case 'eip1559':
        return spec.from.signTransaction({
          ...base,
          type: 'eip1559',
          chainId,
          ...fees,
          accessList: spec.accessList ?? [],
        });
      case 'eip7702':
        return spec.from.signTransaction({
          ...base,
          to: spec.to,
          type: 'eip7702',
          chainId,
          ...fees,
          authorizationList: await this.authorize(spec.delegations),
        });
    }
  }

  /** Authorizations consume the authority's nonce when applied, so they take one from its sequence. */
  private async authorize(delegations: readonly Delegation[]): Promise<SignedAuthorization[]> {
    const list: SignedAuthorization[] = [];
    for (const { authority, contract } of delegations) {
      const nonce = await this.takeNonce(authority.address);
      list.push(await authority.signAuthorization({ chainId: this.chainId, address: contract, nonce }));
    }
    return list;
  }

  /** The first use of an account asks anvil for its mined nonce; later ones count locally. */
  private takeNonce(address: Address): Promise<number> {
    const next =
      this.nonces.get(address) ??
      this.anvil.rpc<Hex>('eth_getTransactionCount', [address, 'latest']).then((n) => Number(n));
    this.nonces.set(
      address,
      next.then((n) => n + 1),
    );
    return next;
  }
}

/** An address nobody has used, derived from a label so reruns reuse the same one. */
export function freshAddress(label: string): Address {
  return getAddress(slice(keccak256(stringToHex(`ethtrace fresh address ${label}`)), 12));
}

interface PlannedTx {
  raw: Hex;
  expect: TxOutcome;
}

async function mine(anvil: Anvil, txs: readonly PlannedTx[]): Promise<MinedBlock> {
  return mineBlock(
    anvil,
    txs.map((t) => t.raw),
    { expect: txs.map((t) => t.expect) },
  );
}

const ok = async (raw: Promise<Hex>): Promise<PlannedTx> => ({ raw: await raw, expect: 'success' });
const reverts = async (raw: Promise<Hex>): Promise<PlannedTx> => ({ raw: await raw, expect: 'reverted' });

/** Deploys LogStore in a block of its own. */
export async function deployLogStore(
  anvil: Anvil,
  factory: TxFactory,
  from: PrivateKeyAccount,
): Promise<{ logStore: Address; block: MinedBlock }> {
  const block = await mine(anvil, [
    await ok(factory.sign({ type: 'eip1559', from, data: LOG_STORE_INITCODE, gas: DEPLOY_GAS })),
  ]);
  const address = block.receipts[0]?.contractAddress;
  if (!address) throw new Error('LogStore deployment has no contract address');
  return { logStore: getAddress(address), block };
}

export interface BasicChain {
  /** Blocks 1..N as mined, in order. */
  blocks: MinedBlock[];
  logStore: Address;
  /** The EOA delegated to LogStore by EIP-7702; absent before Prague. */
  delegatedEoa?: Address;
}

export interface BasicChainOptions {
  /**
   * Adds a creation whose initcode reverts. Off by default: anvil 1.7.1 leaves an empty account at
   * the would-be contract address, so that block's state root is not the one a correct client
   * computes and an import that checks state roots stops there. Fine where only traces and
   * receipts are compared.
   */
  failedCreation?: boolean;
}

/**
 * A short chain touching each transaction envelope and outcome a trace or receipt can differ on:
 * every tx type (legacy with and without EIP-155, 2930, 1559, 7702 from Prague on), value
 * transfers to known and never-seen accounts, a deployment that writes storage, calls emitting
 * 0–3 logs, an explicit REVERT with data, an out-of-gas call, a delegated EOA running contract
 * code, several transactions per sender per block, and an empty block.
 */
export async function buildBasicChain(anvil: Anvil, opts: BasicChainOptions = {}): Promise<BasicChain> {
  const f = new TxFactory(anvil);
  const blocks = [await mine(anvil, await transfers(f))];
  const { logStore, block } = await deployLogStore(anvil, f, devAccount(0));
  blocks.push(block);
  blocks.push(await mine(anvil, await logStoreCalls(f, logStore)));
  const delegatedEoa = isActive(anvil.hardfork, 'prague') ? devAccount(6) : undefined;
  if (delegatedEoa) blocks.push(await mine(anvil, await delegation(f, logStore, delegatedEoa)));
  blocks.push(
    await mine(anvil, await mixedOutcomes(f, logStore, delegatedEoa, opts.failedCreation ?? false)),
  );
  blocks.push(await mine(anvil, []));
  return delegatedEoa ? { blocks, logStore, delegatedEoa: delegatedEoa.address } : { blocks, logStore };
}

/** Value transfers in every pre-7702 envelope, to fresh and known accounts, two from one sender. */
async function transfers(f: TxFactory): Promise<PlannedTx[]> {
  const [a0, a1, a2, a3, a4] = [0, 1, 2, 3, 4].map(devAccount) as Five<PrivateKeyAccount>;
  const fresh = freshAddress('basic/access-listed');
  return [
    await ok(
      f.sign({
        type: 'eip1559',
        from: a0,
        to: freshAddress('basic/1559'),
        value: parseEther('1'),
        gas: TRANSFER_GAS,
      }),
    ),
    await ok(
      f.sign({
        type: 'legacy',
        eip155: false,
        from: a1,
        to: freshAddress('basic/pre-155'),
        value: parseEther('0.5'),
        gas: TRANSFER_GAS,
      }),
    ),
    await ok(
      f.sign({ type: 'legacy', eip155: true, from: a2, to: a3.address, value: 12_345n, gas: TRANSFER_GAS }),
    ),
    await ok(
      f.sign({
        type: 'eip2930',
        from: a3,
        to: fresh,
        value: 1n,
        gas: ACCESS_LIST_TRANSFER_GAS,
        accessList: [{ address: fresh, storageKeys: [zeroHash] }],
      }),
    ),
    await ok(
      f.sign({ type: 'eip1559', from: a0, to: a4.address, value: parseEther('2'), gas: TRANSFER_GAS }),
    ),
  ];
}

/** LogStore calls emitting 3, 2, 1 and 0 logs, one per envelope, then an explicit REVERT. */
async function logStoreCalls(f: TxFactory, logStore: Address): Promise<PlannedTx[]> {
  const [, a1, a2, a3, a4] = [0, 1, 2, 3, 4].map(devAccount) as Five<PrivateKeyAccount>;
  const to = logStore;
  const gas = CALL_GAS;
  const slot2: Hex = numberToHex(2, { size: 32 });
  return [
    await ok(
      f.sign({
        type: 'eip1559',
        from: a1,
        to,
        gas,
        data: logStoreCalldata({ key: 1n, value: 11n, logs: 3 }),
      }),
    ),
    await ok(
      f.sign({
        type: 'eip1559',
        from: a1,
        to,
        gas,
        data: logStoreCalldata({ key: 1n, value: 12n, logs: 2 }),
      }),
    ),
    await ok(
      f.sign({
        type: 'eip2930',
        from: a2,
        to,
        gas,
        data: logStoreCalldata({ key: 2n, value: 21n, logs: 1 }),
        accessList: [{ address: logStore, storageKeys: [slot2] }],
      }),
    ),
    await ok(
      f.sign({
        type: 'legacy',
        eip155: true,
        from: a3,
        to,
        gas,
        data: logStoreCalldata({ key: 3n, value: 31n, logs: 0 }),
      }),
    ),
    await reverts(
      f.sign({ type: 'eip1559', from: a4, to, gas, data: logStoreCalldata({ key: 4n, value: 0n, logs: 3 }) }),
    ),
  ];
}

/**
 * a5 pays for `eoa`'s delegation to LogStore and calls `eoa` in the same transaction, so the code
 * runs in `eoa`'s account: the logs and the storage write are `eoa`'s. A plain transfer to it then
 * runs that code with empty call data, i.e. value 0, and reverts.
 */
async function delegation(f: TxFactory, logStore: Address, eoa: PrivateKeyAccount): Promise<PlannedTx[]> {
  return [
    await ok(
      f.sign({
        type: 'eip7702',
        from: devAccount(5),
        to: eoa.address,
        data: logStoreCalldata({ key: 6n, value: 61n, logs: 3 }),
        gas: DELEGATION_GAS,
        delegations: [{ authority: eoa, contract: logStore }],
      }),
    ),
    await reverts(
      f.sign({ type: 'eip1559', from: devAccount(0), to: eoa.address, value: 1n, gas: CALL_GAS }),
    ),
  ];
}

/**
 * Successes and failures side by side: a pre-EIP-155 contract call, an out-of-gas call, a
 * self-transfer, optionally a creation that reverts and, after Prague, the delegated EOA calling
 * itself (a transaction from an account with code, which EIP-7702 allows). That last one cannot
 * share the delegation's block: anvil's pool queues a transaction whose nonce only the delegation
 * makes valid, though a real chain would accept both in one block.
 */
async function mixedOutcomes(
  f: TxFactory,
  logStore: Address,
  eoa: PrivateKeyAccount | undefined,
  failedCreation: boolean,
): Promise<PlannedTx[]> {
  const [, a1, a2, a3, a4] = [0, 1, 2, 3, 4].map(devAccount) as Five<PrivateKeyAccount>;
  const planned = [
    await ok(
      f.sign({
        type: 'legacy',
        eip155: false,
        from: a2,
        to: logStore,
        data: logStoreCalldata({ key: 5n, value: 51n, logs: 3 }),
        gas: CALL_GAS,
      }),
    ),
    await reverts(
      f.sign({
        type: 'eip1559',
        from: a3,
        to: logStore,
        data: logStoreCalldata({ key: 8n, value: 81n, logs: 3 }),
        gas: OUT_OF_GAS_CALL_GAS,
      }),
    ),
    await ok(f.sign({ type: 'eip1559', from: a1, to: a1.address, value: 1n, gas: TRANSFER_GAS })),
  ];
  if (failedCreation) {
    // Initcode PUSH0 PUSH0 REVERT.
    planned.push(await reverts(f.sign({ type: 'eip1559', from: a4, data: '0x5f5ffd', gas: DEPLOY_GAS })));
  }
  if (eoa) {
    const data = logStoreCalldata({ key: 9n, value: 91n, logs: 2 });
    planned.push(await ok(f.sign({ type: 'eip1559', from: eoa, to: eoa.address, data, gas: CALL_GAS })));
  }
  return planned;
}

type Five<T> = [T, T, T, T, T];

import type { Block } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { Account, type Address, bytesToBigInt, KECCAK256_NULL } from '@ethereumjs/util';
import type { ChainSpec } from '../chain/genesis.ts';
import { depositContractOf } from '../evm/block.ts';
import type { AccountChange } from '../evm/state.ts';
import { EvmForks, isDaoForkBlock } from '../exec/evmRules.ts';
import { keccak256 } from '../primitives/keccak.ts';
import { StoreInconsistentError } from '../store/errors.ts';
import type { ChainStore } from '../store/types.ts';
import {
  allocChanges,
  type ExecutedBlock,
  executeBlock,
  HeadState,
  type StateWrite,
} from './evmExecution.ts';

/**
 * Opens what executes a datadir's blocks and keeps the state after its head (ChainWriter's part
 * that could differ by EVM): `openEvmEngine`, the EVM of src/evm on tries of our own
 * (src/ingest/evmExecution.ts), is the one the service runs. The tests open @ethereumjs/vm's runBlock
 * the same way (test/support/ethereumjsOracle/importEngine.ts), the oracle
 * test/ingest/evmImport.test.ts compares every stored table with.
 */
export type EngineOpener = (store: ChainStore, spec: ChainSpec, common: Common) => Promise<Engine>;

/** The head state as the dev chain reads and sets it (admission checks, anvil_set*). */
export interface HeadStateView {
  getAccount(address: Address): Promise<Account | undefined>;
  getCode(address: Address): Promise<Uint8Array>;
  putAccount(address: Address, account: Account): Promise<void>;
  putCode(address: Address, code: Uint8Array): Promise<void>;
  putStorage(address: Address, slot: Uint8Array, value: Uint8Array): Promise<void>;
}

export interface Engine {
  readonly view: HeadStateView;
  /** Moves the head state to a stored root (open, rewind). */
  setRoot(root: Uint8Array, head: { number: bigint; hash: Uint8Array } | null): Promise<void>;
  /** The spec's alloc as the head state (an empty store); its state root. */
  genesisState(spec: ChainSpec): Promise<Uint8Array>;
  /** Executes a block on the head state, its changes pending until `takeWrite` or `discard`. */
  execute(block: Block, common: Common): Promise<ExecutedBlock>;
  /** The pending changes as the store takes them, made the head state. */
  takeWrite(block: { number: bigint; hash: Uint8Array }): Promise<StateWrite>;
  /** Drops the pending changes (the head's `root` is where the state goes back to). */
  discard(root: Uint8Array | null): Promise<void>;
  /** Executes on blocks taken (takeWrite) but not stored yet (ChainWriter.groupCommits). */
  readonly keepsUnstoredState: boolean;
  /** The blocks taken so far are stored. */
  stored(): void;
}

/** The EVM of src/evm: every block, the DAO fork's with its irregular state change (src/evm/dao.ts). */
export const openEvmEngine: EngineOpener = async (store, spec) => new EvmEngine(store, spec);

/** BLOCKHASH reaches back this far (the 256 blocks before the one running). */
const HASHES_KEPT = 256n;

class EvmEngine implements Engine {
  private readonly head: HeadState;
  private readonly forks: EvmForks;
  private readonly depositContract: bigint;
  /** Canonical hashes of the 256 blocks up to the head, for BLOCKHASH (read without awaiting). */
  private readonly hashes = new Map<bigint, bigint>();
  readonly view: HeadStateView;
  // Nodes and code of blocks not stored yet stay in the head state until `stored`.
  readonly keepsUnstoredState = true;

  constructor(
    private readonly store: ChainStore,
    spec: ChainSpec,
  ) {
    const trieNode = store.getTrieNodeSync?.bind(store);
    const code = store.getCodeSync?.bind(store);
    if (!trieNode || !code) throw new Error('the EVM executes blocks only on a store with synchronous reads');
    this.head = new HeadState({ trieNode, code }, KECCAK256_RLP_ROOT);
    this.forks = new EvmForks(spec);
    this.depositContract = depositContractOf(spec.json.config as unknown as Record<string, unknown>);
    this.view = new EvmHeadView(this.head);
  }

  async setRoot(root: Uint8Array, head: { number: bigint; hash: Uint8Array } | null): Promise<void> {
    this.head.reset(root);
    this.hashes.clear();
    if (head === null) return;
    for (let n = head.number; n >= 0n && n > head.number - HASHES_KEPT; n--) {
      const hash = await this.store.getCanonicalHash(n);
      if (hash === null) throw new StoreInconsistentError(`canonical block ${n} is missing from the store`);
      this.hashes.set(n, bytesToBigInt(hash));
    }
  }

  async genesisState(spec: ChainSpec): Promise<Uint8Array> {
    this.head.reset(KECCAK256_RLP_ROOT);
    return this.head.apply(allocChanges(spec.alloc));
  }

  async execute(block: Block, common: Common): Promise<ExecutedBlock> {
    // lmdb-js reads from a snapshot renewed on an awaited read: the nodes of the block stored last
    // must be in it.
    await this.store.getHead();
    const hashes = this.hashes;
    return executeBlock(this.head, this.forks.of(common), block, {
      depositContract: this.depositContract,
      daoFork: isDaoForkBlock(common, block.header.number),
      blockHash(number) {
        const hash = hashes.get(number);
        if (hash === undefined)
          throw new StoreInconsistentError(`BLOCKHASH: canonical block ${number} is missing from the store`);
        return hash;
      },
    });
  }

  async takeWrite(block: { number: bigint; hash: Uint8Array }): Promise<StateWrite> {
    this.hashes.set(block.number, bytesToBigInt(block.hash));
    this.hashes.delete(block.number - HASHES_KEPT);
    return this.head.commit();
  }

  async discard(): Promise<void> {
    this.head.discard();
  }

  stored(): void {
    this.head.trim();
  }
}

/** The head state read and set as ethereumjs accounts (what the dev chain's checks use). */
class EvmHeadView implements HeadStateView {
  constructor(private readonly head: HeadState) {}

  async getAccount(address: Address): Promise<Account | undefined> {
    const record = this.head.account(bytesToBigInt(address.bytes));
    if (record === null) return undefined;
    return new Account(record.nonce, record.balance, undefined, record.codeHash);
  }

  async getCode(address: Address): Promise<Uint8Array> {
    const at = bytesToBigInt(address.bytes);
    const record = this.head.account(at);
    if (record === null || equal(record.codeHash, KECCAK256_NULL)) return new Uint8Array(0);
    return this.head.code(record.codeHash, at);
  }

  async putAccount(address: Address, account: Account): Promise<void> {
    const at = bytesToBigInt(address.bytes);
    this.change(at, { nonce: account.nonce, balance: account.balance });
  }

  async putCode(address: Address, code: Uint8Array): Promise<void> {
    this.change(bytesToBigInt(address.bytes), { code });
  }

  async putStorage(address: Address, slot: Uint8Array, value: Uint8Array): Promise<void> {
    this.change(bytesToBigInt(address.bytes), {}, [bytesToBigInt(slot), bytesToBigInt(value)]);
  }

  private change(
    address: bigint,
    fields: { nonce?: bigint; balance?: bigint; code?: Uint8Array },
    slot?: [bigint, bigint],
  ): void {
    const record = this.head.account(address);
    const codeHash = fields.code ? keccak256(fields.code) : (record?.codeHash ?? KECCAK256_NULL);
    const code =
      fields.code ??
      (record === null || equal(codeHash, KECCAK256_NULL)
        ? new Uint8Array(0)
        : this.head.code(codeHash, address));
    const change: AccountChange = {
      address,
      account: {
        nonce: fields.nonce ?? record?.nonce ?? 0n,
        balance: fields.balance ?? record?.balance ?? 0n,
        codeHash,
        code,
      },
      storageCleared: false,
      slots: new Map(slot ? [slot] : []),
    };
    this.head.apply([change]);
  }
}

const KECCAK256_RLP_ROOT = keccak256(Uint8Array.of(0x80));

function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

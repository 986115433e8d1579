import { type Block, type BlockHeader, paramsBlock } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { type ChainSpec, genesisBlock, makeCommon } from '../chain/genesis.ts';
import { decodeStoredHeader } from '../chain/header.ts';
import { checkSameChain, META_GENESIS, schemaRecord, specRecord } from '../chain/storedSpec.ts';
import { UserError } from '../core/errors.ts';
import { type EvmFork, EvmForks } from '../exec/evmRules.ts';
import { CommitRejectedError } from '../store/errors.ts';
import type { BlockRef, BlockWrite, ChainStore } from '../store/types.ts';
import { type Engine, type EngineOpener, type HeadStateView, openEvmEngine } from './engines.ts';
import type { ExecutedBlock } from './evmExecution.ts';

export type BlockResult = ExecutedBlock;

/** A group of blocks stored in one store transaction (see ChainWriter.groupCommits): at most this many, */
export const GROUP_BLOCKS = 64;
/** or the blocks committed within this many milliseconds of the group's first. */
const GROUP_MS = 1000;

/** What one stored block carries besides itself: its receipts, encoded and rendered (src/wire/receipts.ts). */
export interface BlockReceipts {
  encoded: Uint8Array[];
  json: string[];
}

/**
 * The one writer of a datadir's chain: the head, the state after it (a trie over the store, with
 * each block's changes recorded for the flat history), and how a block becomes one store
 * transaction. The importer and the dev chain's miner both add blocks through it, so a dev block
 * is executed and stored exactly like an imported one.
 */
export class ChainWriter {
  private constructor(
    readonly store: ChainStore,
    readonly spec: ChainSpec,
    /** The Common the writer moves from fork to fork as blocks go by. */
    readonly common: Common,
    private readonly engine: Engine,
    private readonly evmForks: EvmForks,
    private head: { ref: BlockRef; header: BlockHeader } | null,
  ) {}

  /** Blocks committed, not stored yet (see groupCommits). */
  private queued: BlockWrite[] = [];
  private queuedAt = 0;
  private grouping = false;
  private groupBlocks = GROUP_BLOCKS;

  /**
   * A writer at the store's head; the store must hold no chain or the chain `spec` makes.
   * `openEngine`: what executes blocks (src/ingest/engines.ts), the EVM of src/evm unless a test
   * passes its oracle.
   */
  static async open(
    store: ChainStore,
    spec: ChainSpec,
    openEngine: EngineOpener = openEvmEngine,
  ): Promise<ChainWriter> {
    const common = makeCommon(spec);
    // The dev chain's checks ask the writer's Common for block parameters (the next blob gas price),
    // which ethereumjs's VM used to add to it.
    common.updateParams(paramsBlock);
    const engine = await openEngine(store, spec, common);
    await checkSameChain(store, spec);
    const headRef = await store.getHead();
    let head: ChainWriter['head'] = null;
    if (headRef) {
      const header = await store.getHeader(headRef.hash);
      const root = await store.getStateRoot(headRef.hash);
      if (!header || !root)
        throw new Error(`store is missing the header or state root of its head ${headRef.number}`);
      head = { ref: headRef, header: decodeHeader(header, common) };
      await engine.setRoot(root, headRef);
    }
    return new ChainWriter(store, spec, common, engine, new EvmForks(spec), head);
  }

  /** The EVM's rules for the fork the Common is set to (the block being mined or imported). */
  evmFork(): EvmFork {
    return this.evmForks.of(this.common);
  }

  /** The state after the head (what the next block starts from), as the dev chain reads and sets it. */
  get headState(): HeadStateView {
    return this.engine.view;
  }

  get headRef(): BlockRef | null {
    return this.head?.ref ?? null;
  }

  get headHeader(): BlockHeader | null {
    return this.head?.header ?? null;
  }

  /** The genesis block of the spec and its state root, the head state being set to the spec's alloc. */
  async prepareGenesis(): Promise<{ block: Block; stateRoot: Uint8Array }> {
    const { spec } = this;
    this.common.setHardforkBy({ blockNumber: 0n, timestamp: BigInt(spec.json.timestamp ?? 0) });
    const stateRoot = await this.engine.genesisState(spec);
    return { block: genesisBlock(spec, this.common, stateRoot), stateRoot };
  }

  /**
   * Block 0 with the records saying what chain the datadir holds (and `meta`) in one store
   * transaction, which fails when the store is no longer empty: of two processes initialising one
   * datadir at once, only one makes the chain.
   */
  async storeGenesis(
    genesis: { block: Block; stateRoot: Uint8Array },
    meta: Array<[string, Uint8Array]> = [],
  ): Promise<void> {
    const records: Array<[string, Uint8Array]> = [
      [META_GENESIS, specRecord(this.spec)],
      schemaRecord(),
      ...meta,
    ];
    try {
      await this.commit(genesis.block, genesis.stateRoot, { encoded: [], json: [] }, records);
    } catch (e) {
      if (!(e instanceof CommitRejectedError)) throw e;
      throw new UserError(
        'another process (an ethtrace start or import on the same --datadir) initialised this datadir first; nothing was written: run the command again once that process has made its chain, or use another --datadir',
      );
    }
  }

  /** Stores block 0 of the spec on an empty store (a new dev chain); a no-op if the store has a chain. */
  async initGenesis(meta: Array<[string, Uint8Array]> = []): Promise<void> {
    if (this.head) return;
    await this.storeGenesis(await this.prepareGenesis(), meta);
  }

  /**
   * Executes `block` on the head state (roots, receipts and requests computed); the caller stores it
   * or calls `discard`.
   */
  async execute(block: Block): Promise<BlockResult> {
    return this.engine.execute(block, this.common);
  }

  /** Drops what a block that will not be stored wrote, and puts the state back on the head. */
  async discard(): Promise<void> {
    // The blocks before it were valid: they are stored first, so the head state is the store's.
    await this.flush();
    const root = this.head && (await this.store.getStateRoot(this.head.ref.hash));
    await this.engine.discard(root);
  }

  /**
   * Blocks committed from now on are stored in groups, one store transaction (and one flush to
   * disk) per group of up to GROUP_BLOCKS blocks or GROUP_MS of work, instead of one per block: an
   * import of chain files, which a crash leaves at its last stored group and a re-run continues.
   * Only an engine that keeps the state of blocks not yet stored can (the EVM's); `flush` stores
   * the group under way.
   */
  groupCommits(blocks = GROUP_BLOCKS): void {
    this.grouping = this.engine.keepsUnstoredState;
    this.groupBlocks = blocks;
  }

  /** Stores the blocks committed but not stored yet (see groupCommits). */
  async flush(): Promise<void> {
    const writes = this.queued;
    if (writes.length === 0) return;
    this.queued = [];
    try {
      if (writes.length > 1 && this.store.commitBlocks) await this.store.commitBlocks(writes);
      else for (const write of writes) await this.store.commitBlock(write);
    } catch (e) {
      // The head and its state go back to what the store holds.
      await this.reload();
      throw e;
    }
    this.engine.stored();
  }

  /** Stores one block and what its execution wrote in one store transaction; it becomes the head. */
  async commit(
    block: Block,
    stateRoot: Uint8Array,
    receipts: BlockReceipts,
    meta?: Array<[string, Uint8Array]>,
  ): Promise<void> {
    const hash = block.hash();
    const state = await this.engine.takeWrite({ number: block.header.number, hash });
    const write: BlockWrite = {
      number: block.header.number,
      hash,
      header: block.header.serialize(),
      body: RLP.encode(block.raw().slice(1)),
      stateRoot,
      txHashes: block.transactions.map((tx) => tx.hash()),
      receipts: receipts.encoded,
      receiptsJson: receipts.json,
      ...state,
      ...(meta ? { meta } : {}),
    };
    if (this.queued.length === 0) this.queuedAt = performance.now();
    this.queued.push(write);
    this.head = { ref: { number: block.header.number, hash }, header: block.header };
    if (
      !this.grouping ||
      meta !== undefined ||
      this.queued.length >= this.groupBlocks ||
      performance.now() - this.queuedAt >= GROUP_MS
    )
      await this.flush();
  }

  /** The head and its state as the store holds them. */
  private async reload(): Promise<void> {
    const ref = await this.store.getHead();
    const header = ref && (await this.store.getHeader(ref.hash));
    const root = ref && (await this.store.getStateRoot(ref.hash));
    this.head = ref && header ? { ref, header: decodeHeader(header, this.common) } : null;
    if (ref && root) await this.engine.setRoot(root, ref);
  }

  /**
   * Removes the blocks after `number` from the store (a dev chain's evm_revert) and moves the head
   * and its state back to block `number`.
   */
  async rewindTo(number: bigint): Promise<void> {
    await this.flush();
    await this.store.unwindTo(number);
    const ref = await this.store.getHead();
    const header = ref && (await this.store.getHeader(ref.hash));
    const root = ref && (await this.store.getStateRoot(ref.hash));
    if (!ref || !header || !root) throw new Error(`store is missing block ${number} after unwinding to it`);
    this.head = { ref, header: decodeHeader(header, this.common) };
    await this.engine.setRoot(root, ref);
  }
}

/** A stored header, decoded with the writer's Common moved to the header's fork. */
function decodeHeader(rlp: Uint8Array, common: Common): BlockHeader {
  return decodeStoredHeader(rlp, (blockNumber, timestamp) => {
    common.setHardforkBy({ blockNumber, timestamp });
    return common;
  });
}

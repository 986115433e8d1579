import { statSync } from 'node:fs';
import {
  type Block,
  type BlockHeader,
  createBlock,
  createBlockFromBytesArray,
  createBlockHeaderFromRLP,
  genTransactionsTrieRoot,
} from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { Hardfork } from '@ethereumjs/common';
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import type { TypedTransaction } from '@ethereumjs/tx';
import { Account, Address, bytesToBigInt, bytesToHex, equalsBytes, KECCAK256_RLP } from '@ethereumjs/util';
import { createVM, runBlock, type VM } from '@ethereumjs/vm';
import { canonicalBlockHashes } from '../chain/blockHashes.ts';
import { type ChainSpec, genesisBlock, makeCommon } from '../chain/genesis.ts';
import { checkSameChain, META_GENESIS, schemaRecord, specRecord } from '../chain/storedSpec.ts';
import { UserError } from '../core/errors.ts';
import { keccak256 } from '../primitives/keccak.ts';
import { CommitRejectedError } from '../store/errors.ts';
import type { BlockRef, ChainStore } from '../store/types.ts';
import { renderReceipts } from '../wire/receipts.ts';
import { RecordingStateManager } from './recordingState.ts';
import { type RawBlock, readRlpBlocks } from './rlpFile.ts';
import { BufferedTrieDb } from './trieDb.ts';

export interface ImportProgress {
  /** Called after each stored block; `fraction` is how far through the input bytes we are. */
  block(info: { number: bigint; txs: number; gasUsed: bigint; fraction: number }): void;
  skipped(number: bigint): void;
}

export interface ImportOptions {
  store: ChainStore;
  spec: ChainSpec;
  files: string[];
  /** False for chains made by dev nodes whose state roots are not the canonical ones. */
  verifyStateRoot: boolean;
  progress?: ImportProgress;
}

export interface ImportSummary {
  imported: number;
  skipped: number;
  transactions: number;
  gasUsed: bigint;
  seconds: number;
  head: BlockRef | null;
}

// Header field positions in the consensus encoding, needed before a block can be decoded (the
// fork, and so the expected fields, depend on number and timestamp).
const HEADER_NUMBER = 8;
const HEADER_TIMESTAMP = 11;

/**
 * Executes the blocks of `geth export` files on the chain in the store, verifying every block before
 * storing it; one block is one store transaction. Re-running continues where the store stands.
 */
export async function importChain(opts: ImportOptions): Promise<ImportSummary> {
  const started = performance.now();
  const importer = await Importer.open(opts);
  const totalBytes = opts.files.reduce((sum, f) => sum + fileSize(f), 0);
  let bytesDone = 0;
  const summary = { imported: 0, skipped: 0, transactions: 0, gasUsed: 0n };
  for (const file of opts.files) {
    for await (const raw of readRlpBlocks(file)) {
      const outcome = await importer.importBlock(raw);
      bytesDone += raw.rlp.length;
      if (outcome.skipped) {
        summary.skipped++;
        opts.progress?.skipped(outcome.number);
        continue;
      }
      summary.imported++;
      summary.transactions += outcome.txs;
      summary.gasUsed += outcome.gasUsed;
      opts.progress?.block({
        number: outcome.number,
        txs: outcome.txs,
        gasUsed: outcome.gasUsed,
        fraction: totalBytes > 0 ? bytesDone / totalBytes : 1,
      });
    }
  }
  return { ...summary, seconds: (performance.now() - started) / 1000, head: await opts.store.getHead() };
}

type Outcome =
  | { skipped: true; number: bigint }
  | { skipped: false; number: bigint; txs: number; gasUsed: bigint };

export class Importer {
  private constructor(
    private readonly opts: ImportOptions,
    private readonly common: Common,
    private readonly vm: VM,
    private readonly state: RecordingStateManager,
    private readonly trieDb: BufferedTrieDb,
    private head: { ref: BlockRef; header: BlockHeader } | null,
  ) {}

  static async open(opts: ImportOptions): Promise<Importer> {
    const common = makeCommon(opts.spec);
    const trieDb = new BufferedTrieDb(opts.store);
    const trie = new MerklePatriciaTrie({ db: trieDb, useKeyHashing: true, common, cacheSize: 50_000 });
    const state = new RecordingStateManager({ common, trie });
    const vm = await createVM({ common, stateManager: state, blockchain: canonicalBlockHashes(opts.store) });
    await checkSameChain(opts.store, opts.spec);
    const headRef = await opts.store.getHead();
    let head: Importer['head'] = null;
    if (headRef) {
      const header = await opts.store.getHeader(headRef.hash);
      const root = await opts.store.getStateRoot(headRef.hash);
      if (!header || !root)
        throw new Error(`store is missing the header or state root of its head ${headRef.number}`);
      head = { ref: headRef, header: decodeHeader(header, common) };
      await state.setStateRoot(root);
    }
    return new Importer(opts, common, vm, state, trieDb, head);
  }

  async importBlock(raw: RawBlock): Promise<Outcome> {
    const values = decodeValues(raw);
    const { number, timestamp } = numberAndTime(values, raw);
    if (this.head && number <= this.head.ref.number) return this.checkStored(raw, number);
    this.common.setHardforkBy({ blockNumber: number, timestamp });
    const block = decodeBlock(values, this.common, raw);
    if (!this.head) {
      if (number > 1n) throw unknownParent(raw, block, 'the store is empty');
      // An empty store starts from the genesis of the spec; a file may also carry block 0 itself.
      const genesis = await this.prepareGenesis(number === 0n ? block : null, raw);
      if (number === 1n && !equalsBytes(block.header.parentHash, genesis.block.hash())) {
        throw new UserError(
          `${where(raw)}: block 1 (${bytesToHex(block.hash())}) has parent ${bytesToHex(block.header.parentHash)}, but the genesis file makes genesis ${bytesToHex(genesis.block.hash())}`,
        );
      }
      await this.storeGenesis(genesis);
      if (number === 0n) return { skipped: false, number: 0n, txs: 0, gasUsed: 0n };
      this.common.setHardforkBy({ blockNumber: number, timestamp });
    }
    const head = this.head;
    if (!head) throw new Error('genesis was not stored');
    if (number !== head.ref.number + 1n)
      throw unknownParent(raw, block, `the store ends at block ${head.ref.number}`);
    try {
      return await this.executeAndStore(block, head.header, raw);
    } catch (e) {
      this.trieDb.discardPending();
      this.state.forgetChanges();
      throw e;
    }
  }

  private async checkStored(raw: RawBlock, number: bigint): Promise<Outcome> {
    const stored = await this.opts.store.getCanonicalHash(number);
    const hash = headerHash(raw.rlp);
    if (stored && equalsBytes(stored, hash)) return { skipped: true, number };
    throw new UserError(
      `${where(raw)}: block ${number} (${bytesToHex(hash)}) conflicts with block ${number} already stored (${stored ? bytesToHex(stored) : 'none'}); refusing to import a different chain into this datadir`,
    );
  }

  /**
   * Block 0 and its state: the spec's own genesis, or the file's block 0 — checked against the spec,
   * or taken as given when state roots are not verified (dev nodes write their own genesis root).
   */
  /** Stores block 0 of the spec on an empty store (a new dev chain); a no-op if the store has a chain. */
  async initGenesis(meta: Array<[string, Uint8Array]> = []): Promise<void> {
    if (this.head) return;
    const genesis = await this.prepareGenesis(null, { rlp: new Uint8Array(), file: 'genesis', offset: 0 });
    await this.storeGenesis(genesis, meta);
  }

  /**
   * Block 0 with the genesis record (and `meta`) in one store transaction, which fails when the store
   * is no longer empty: of two processes initialising one datadir at once, only one makes the chain.
   */
  private async storeGenesis(
    genesis: { block: Block; stateRoot: Uint8Array },
    meta: Array<[string, Uint8Array]> = [],
  ): Promise<void> {
    const records: Array<[string, Uint8Array]> = [
      [META_GENESIS, specRecord(this.opts.spec)],
      schemaRecord(),
      ...meta,
    ];
    try {
      await this.store(genesis.block, genesis.stateRoot, { encoded: [], json: [] }, records);
    } catch (e) {
      if (!(e instanceof CommitRejectedError)) throw e;
      throw new UserError(
        'another process (an ethtrace start or import on the same --datadir) initialised this datadir first; nothing was written: run the command again once that process has made its chain, or use another --datadir',
      );
    }
  }

  /**
   * Removes the blocks after `number` from the store (a dev chain's evm_revert) and moves the head
   * and its state back to block `number`.
   */
  async rewindTo(number: bigint): Promise<void> {
    await this.opts.store.unwindTo(number);
    const ref = await this.opts.store.getHead();
    const header = ref && (await this.opts.store.getHeader(ref.hash));
    const root = ref && (await this.opts.store.getStateRoot(ref.hash));
    if (!ref || !header || !root) throw new Error(`store is missing block ${number} after unwinding to it`);
    this.head = { ref, header: decodeHeader(header, this.common) };
    this.trieDb.discardPending();
    this.state.forgetChanges();
    await this.state.setStateRoot(root);
  }

  /** The state the next block starts from (the head's), for checks before mining. */
  /** The store the importer writes (a dev chain keeps its pending pool there too). */
  get chainStore(): ChainStore {
    return this.opts.store;
  }

  get headState(): RecordingStateManager {
    return this.state;
  }

  get headHeader(): BlockHeader | null {
    return this.head?.header ?? null;
  }

  get chainCommon(): Common {
    return this.common;
  }

  /**
   * Mines the transactions into one new block on the head (a dev chain): executes them exactly as an
   * imported block is executed and stores the block the same way; the header's roots, gas used and
   * bloom come from the execution. The transactions must be valid on the head state.
   */
  async mine(txs: TypedTransaction[], timestamp: bigint): Promise<Block> {
    const parent = this.head;
    if (!parent) throw new Error('mine needs a genesis block');
    const number = parent.ref.number + 1n;
    const time = timestamp > parent.header.timestamp ? timestamp : parent.header.timestamp + 1n;
    this.common.setHardforkBy({ blockNumber: number, timestamp: time });
    const has = (eip: number) => this.common.isActivatedEIP(eip);
    const header: Record<string, unknown> = {
      parentHash: parent.header.hash(),
      number,
      timestamp: time,
      gasLimit: parent.header.gasLimit,
      coinbase: parent.header.coinbase,
      difficulty: 0n,
      // Dev chains have no beacon chain: the randomness is derived from the parent, as anvil does.
      mixHash: keccak256(parent.header.hash()),
      nonce: new Uint8Array(8),
    };
    if (has(1559)) header.baseFeePerGas = parent.header.calcNextBaseFee();
    if (has(4844)) {
      header.excessBlobGas = parent.header.calcNextExcessBlobGas(this.common);
      header.blobGasUsed = txs.reduce(
        (sum, tx) =>
          sum +
          ('blobVersionedHashes' in tx
            ? BigInt(tx.blobVersionedHashes.length) * this.common.param('blobGasPerBlob')
            : 0n),
        0n,
      );
    }
    if (has(4788)) header.parentBeaconBlockRoot = new Uint8Array(32);
    const withdrawals = has(4895) ? { withdrawals: [] } : {};
    const draft = createBlock(
      { header, transactions: txs, ...withdrawals },
      { common: this.common, skipConsensusFormatValidation: true },
    );
    try {
      const result = await runBlock(this.vm, {
        block: draft,
        generate: true,
        skipHeaderValidation: true,
        skipBlockValidation: true,
        setHardfork: false,
        clearCache: false,
      });
      const sealed = createBlock(
        {
          header: {
            ...header,
            stateRoot: result.stateRoot,
            receiptTrie: result.receiptsRoot,
            logsBloom: result.logsBloom,
            gasUsed: result.gasUsed,
            transactionsTrie: await genTransactionsTrieRoot(txs),
            ...(result.requestsHash ? { requestsHash: result.requestsHash } : {}),
            ...(has(4895) ? { withdrawalsRoot: KECCAK256_RLP } : {}),
          },
          transactions: txs,
          ...withdrawals,
        },
        { common: this.common, skipConsensusFormatValidation: true },
      );
      await this.store(sealed, result.stateRoot, renderReceipts(sealed, result.receipts));
      return sealed;
    } catch (e) {
      this.trieDb.discardPending();
      this.state.forgetChanges();
      // The state manager moved to the failed block's state: put it back on the head.
      const root = await this.opts.store.getStateRoot(parent.ref.hash);
      if (root) await this.state.setStateRoot(root);
      throw e;
    }
  }

  private async prepareGenesis(
    fromFile: Block | null,
    raw: RawBlock,
  ): Promise<{ block: Block; stateRoot: Uint8Array }> {
    const { spec, verifyStateRoot } = this.opts;
    this.common.setHardforkBy({ blockNumber: 0n, timestamp: BigInt(spec.json.timestamp ?? 0) });
    for (const a of spec.alloc) {
      const address = new Address(a.address);
      await this.state.putAccount(address, new Account(a.nonce, a.balance));
      if (a.code.length > 0) await this.state.putCode(address, a.code);
      for (const [slot, value] of a.storage) await this.state.putStorage(address, slot, value);
    }
    const stateRoot = await this.state.getStateRoot();
    const ours = genesisBlock(spec, this.common, stateRoot);
    if (fromFile && verifyStateRoot && !equalsBytes(fromFile.hash(), ours.hash())) {
      throw new UserError(
        `${where(raw)}: block 0 (${bytesToHex(fromFile.hash())}) is not the genesis of the given genesis file (${bytesToHex(ours.hash())})${describeHeaderDifference(fromFile.header, ours.header)}`,
      );
    }
    return { block: fromFile ?? ours, stateRoot };
  }

  private async executeAndStore(block: Block, parent: BlockHeader, raw: RawBlock): Promise<Outcome> {
    const fail = (check: string, have: unknown, want: unknown) =>
      new UserError(
        `${where(raw)}: block ${block.header.number} (${bytesToHex(block.hash())}) failed the ${check} check: header has ${show(have)}, expected ${show(want)}`,
      );
    const header = block.header;
    if (!equalsBytes(header.parentHash, parent.hash()))
      throw fail('parent hash', header.parentHash, parent.hash());
    this.checkHeaderAgainstParent(block, parent, fail);
    try {
      await block.validateData(false, true);
      if (this.common.isActivatedEIP(4844)) block.validateBlobTransactions(parent);
    } catch (e) {
      throw new UserError(
        `${where(raw)}: block ${header.number} (${bytesToHex(block.hash())}) is invalid: ${(e as Error).message}`,
      );
    }
    let result: Awaited<ReturnType<typeof runBlock>>;
    try {
      result = await runBlock(this.vm, {
        block,
        generate: true,
        skipHeaderValidation: true,
        skipBlockValidation: true,
        setHardfork: false,
        clearCache: false,
      });
    } catch (e) {
      throw new UserError(
        `${where(raw)}: block ${header.number} (${bytesToHex(block.hash())}) failed to execute: ${(e as Error).message}`,
      );
    }
    if (result.gasUsed !== header.gasUsed) throw fail('gas used', header.gasUsed, result.gasUsed);
    if (!equalsBytes(result.receiptsRoot, header.receiptTrie))
      throw fail('receipts root', header.receiptTrie, result.receiptsRoot);
    if (!equalsBytes(result.logsBloom, header.logsBloom))
      throw fail('logs bloom', header.logsBloom, result.logsBloom);
    if (
      result.requestsHash !== undefined &&
      header.requestsHash !== undefined &&
      !equalsBytes(result.requestsHash, header.requestsHash)
    ) {
      throw fail('requests hash', header.requestsHash, result.requestsHash);
    }
    if (this.opts.verifyStateRoot && !equalsBytes(result.stateRoot, header.stateRoot)) {
      throw fail('state root', header.stateRoot, result.stateRoot);
    }
    await this.store(block, result.stateRoot, renderReceipts(block, result.receipts));
    return { skipped: false, number: header.number, txs: block.transactions.length, gasUsed: header.gasUsed };
  }

  /** The header rules that relate a block to its parent (the seal of proof-of-work blocks is not checked). */
  private checkHeaderAgainstParent(
    block: Block,
    parent: BlockHeader,
    fail: (check: string, have: unknown, want: unknown) => UserError,
  ): void {
    const header = block.header;
    if (header.timestamp <= parent.timestamp)
      throw fail('timestamp', header.timestamp, `> ${parent.timestamp}`);
    try {
      header.validateGasLimit(parent);
    } catch (e) {
      throw fail('gas limit', header.gasLimit, (e as Error).message.split(' (')[0]);
    }
    if (this.common.isActivatedEIP(1559)) {
      const londonHere = this.common.hardforkBlock(Hardfork.London) === header.number;
      const want = londonHere ? BigInt(this.common.param('initialBaseFee')) : parent.calcNextBaseFee();
      // anvil mines block 1 with its genesis base fee unchanged instead of the EIP-1559 formula. Dev-node
      // chains (imported without state-root checks) may do that, and only there.
      const devNodeFirstBlock =
        !this.opts.verifyStateRoot && header.number === 1n && header.baseFeePerGas === parent.baseFeePerGas;
      if (header.baseFeePerGas !== want && !devNodeFirstBlock)
        throw fail('base fee', header.baseFeePerGas, want);
    }
    if (!this.common.gteHardfork(Hardfork.Paris)) {
      const want = header.ethashCanonicalDifficulty(parent);
      if (header.difficulty !== want) throw fail('difficulty', header.difficulty, want);
    }
  }

  private async store(
    block: Block,
    stateRoot: Uint8Array,
    receipts: { encoded: Uint8Array[]; json: string[] },
    meta?: Array<[string, Uint8Array]>,
  ) {
    const changes = await this.state.takeChanges();
    const { trieNodes, code } = this.trieDb.takePending();
    const hash = block.hash();
    await this.opts.store.commitBlock({
      number: block.header.number,
      hash,
      header: block.header.serialize(),
      body: RLP.encode(block.raw().slice(1)),
      stateRoot,
      txHashes: block.transactions.map((tx) => tx.hash()),
      receipts: receipts.encoded,
      receiptsJson: receipts.json,
      trieNodes,
      code,
      ...changes,
      ...(meta ? { meta } : {}),
    });
    this.head = { ref: { number: block.header.number, hash }, header: block.header };
  }
}

function decodeValues(raw: RawBlock): Uint8Array[][] {
  try {
    const decoded = RLP.decode(raw.rlp);
    if (!Array.isArray(decoded) || !Array.isArray(decoded[0]))
      throw new Error('not a [header, transactions, uncles, …] list');
    return decoded as unknown as Uint8Array[][];
  } catch (e) {
    throw new UserError(`${where(raw)}: corrupt block: ${(e as Error).message}`);
  }
}

function numberAndTime(values: Uint8Array[][], raw: RawBlock): { number: bigint; timestamp: bigint } {
  const header = values[0] as unknown as Uint8Array[];
  const number = header[HEADER_NUMBER];
  const timestamp = header[HEADER_TIMESTAMP];
  if (!(number instanceof Uint8Array) || !(timestamp instanceof Uint8Array)) {
    throw new UserError(`${where(raw)}: corrupt block: header has ${header.length} fields`);
  }
  return { number: bytesToBigInt(number), timestamp: bytesToBigInt(timestamp) };
}

function decodeBlock(values: Uint8Array[][], common: Common, raw: RawBlock): Block {
  try {
    // biome-ignore lint/suspicious/noExplicitAny: the block decoder takes the nested RLP arrays untyped
    return createBlockFromBytesArray(values as any, { common });
  } catch (e) {
    throw new UserError(`${where(raw)}: corrupt block: ${(e as Error).message}`);
  }
}

function decodeHeader(rlp: Uint8Array, common: Common): BlockHeader {
  const values = RLP.decode(rlp) as Uint8Array[];
  common.setHardforkBy({
    blockNumber: bytesToBigInt(values[HEADER_NUMBER] ?? new Uint8Array()),
    timestamp: bytesToBigInt(values[HEADER_TIMESTAMP] ?? new Uint8Array()),
  });
  return createBlockHeaderFromRLP(rlp, { common, skipConsensusFormatValidation: true });
}

function unknownParent(raw: RawBlock, block: Block, why: string): UserError {
  return new UserError(
    `${where(raw)}: block ${block.header.number} (${bytesToHex(block.hash())}) has an unknown parent ${bytesToHex(block.header.parentHash)}: ${why}`,
  );
}

function headerHash(blockRlp: Uint8Array): Uint8Array {
  return keccak256(RLP.encode((RLP.decode(blockRlp) as Uint8Array[][])[0] as unknown as Uint8Array[]));
}

function describeHeaderDifference(a: BlockHeader, b: BlockHeader): string {
  const x = a.toJSON() as Record<string, unknown>;
  const y = b.toJSON() as Record<string, unknown>;
  const diffs = Object.keys({ ...x, ...y })
    .filter((k) => JSON.stringify(x[k]) !== JSON.stringify(y[k]))
    .map((k) => `${k} ${show(x[k])} vs ${show(y[k])}`);
  return diffs.length > 0 ? `: ${diffs.join(', ')}` : '';
}

function where(raw: RawBlock): string {
  return `${raw.file} @${raw.offset}`;
}

function show(v: unknown): string {
  if (v instanceof Uint8Array) return bytesToHex(v);
  return String(v);
}

function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

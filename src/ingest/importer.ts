import { statSync } from 'node:fs';
import { type Block, type BlockHeader, createBlockFromBytesArray } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { bytesToBigInt, bytesToHex, equalsBytes } from '@ethereumjs/util';
import type { ChainSpec } from '../chain/genesis.ts';
import { HEADER_NUMBER, HEADER_TIMESTAMP } from '../chain/header.ts';
import { UserError } from '../core/errors.ts';
import { keccak256 } from '../primitives/keccak.ts';
import type { BlockRef, ChainStore } from '../store/types.ts';
import { renderReceipts } from '../wire/receipts.ts';
import { type BlockResult, ChainWriter } from './chainWriter.ts';
import type { EngineOpener } from './engines.ts';
import { type RawBlock, readRlpBlocks } from './rlpFile.ts';
import { type CheckFailure, checkExecution, checkHeaderAgainstParent } from './verify.ts';

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
  /** What executes the blocks (src/ingest/engines.ts); the EVM of src/evm by default. */
  engine?: EngineOpener;
  /** Blocks stored per store transaction at most (ChainWriter.groupCommits; 64 by default). */
  blocksPerCommit?: number;
}

export interface ImportSummary {
  imported: number;
  skipped: number;
  transactions: number;
  gasUsed: bigint;
  seconds: number;
  head: BlockRef | null;
}

/**
 * Executes the blocks of `geth export` files on the chain in the store, verifying every block before
 * storing it; blocks are stored in groups, one store transaction each (ChainWriter.groupCommits).
 * Re-running continues where the store stands.
 */
export async function importChain(opts: ImportOptions): Promise<ImportSummary> {
  const started = performance.now();
  const importer = await Importer.open(opts);
  const totalBytes = opts.files.reduce((sum, f) => sum + fileSize(f), 0);
  const summary = { imported: 0, skipped: 0, transactions: 0, gasUsed: 0n };
  importer.groupCommits(opts.blocksPerCommit);
  try {
    await importFiles(importer, opts, totalBytes, summary);
  } finally {
    await importer.flush();
  }
  return { ...summary, seconds: (performance.now() - started) / 1000, head: await opts.store.getHead() };
}

async function importFiles(
  importer: Importer,
  opts: ImportOptions,
  totalBytes: number,
  summary: { imported: number; skipped: number; transactions: number; gasUsed: bigint },
): Promise<void> {
  let bytesDone = 0;
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
    // A later file may hold blocks of this one again: they are checked against the store.
    await importer.flush();
  }
}

type Outcome =
  | { skipped: true; number: bigint }
  | { skipped: false; number: bigint; txs: number; gasUsed: bigint };

/**
 * The blocks of chain files (or of an upstream node, src/ingest/follower.ts), each decoded, checked
 * against the chain in the store and executed before the writer stores it. A failing block stops the
 * import with where it came from, the check and both values; the blocks before it stay stored.
 */
export class Importer {
  private constructor(
    private readonly writer: ChainWriter,
    private readonly verifyStateRoot: boolean,
  ) {}

  static async open(
    opts: Pick<ImportOptions, 'store' | 'spec' | 'verifyStateRoot' | 'engine'>,
  ): Promise<Importer> {
    return new Importer(await ChainWriter.open(opts.store, opts.spec, opts.engine), opts.verifyStateRoot);
  }

  async importBlock(raw: RawBlock): Promise<Outcome> {
    const common = this.writer.common;
    const values = decodeValues(raw);
    const { number, timestamp } = numberAndTime(values, raw);
    const headRef = this.writer.headRef;
    if (headRef && number <= headRef.number) return this.checkStored(headerHash(raw.rlp), number, where(raw));
    common.setHardforkBy({ blockNumber: number, timestamp });
    return this.add(decodeBlock(values, common, raw), where(raw));
  }

  /**
   * A block that came decoded (the follower's, from an upstream answer checked against its hash),
   * imported as a file's block is: `source` names where it came from in every error.
   */
  async importDecoded(block: Block, source: string): Promise<Outcome> {
    const { number, timestamp } = block.header;
    const headRef = this.writer.headRef;
    if (headRef && number <= headRef.number) return this.checkStored(block.hash(), number, source);
    this.writer.common.setHardforkBy({ blockNumber: number, timestamp });
    return this.add(block, source);
  }

  /** Blocks are stored in groups from now on (ChainWriter.groupCommits); `flush` stores the last. */
  groupCommits(blocks?: number): void {
    this.writer.groupCommits(blocks);
  }

  flush(): Promise<void> {
    return this.writer.flush();
  }

  /** The newest block stored, which the next block must be the child of; null for an empty store. */
  get head(): BlockRef | null {
    return this.writer.headRef;
  }

  /** Removes the blocks after `number` (a reorg's unwind), the head and its state moving back to it. */
  rewindTo(number: bigint): Promise<void> {
    return this.writer.rewindTo(number);
  }

  /** A block past the head: genesis on an empty store, else the head's child, checked and executed. */
  private async add(block: Block, source: string): Promise<Outcome> {
    const writer = this.writer;
    const common = writer.common;
    const { number, timestamp } = block.header;
    if (!writer.headRef) {
      if (number > 1n) throw unknownParent(source, block, 'the store is empty');
      // An empty store starts from the genesis of the spec; a file may also carry block 0 itself.
      const genesis = await this.genesis(number === 0n ? block : null, source);
      if (number === 1n && !equalsBytes(block.header.parentHash, genesis.block.hash())) {
        throw new UserError(
          `${source}: block 1 (${bytesToHex(block.hash())}) has parent ${bytesToHex(block.header.parentHash)}, but the genesis file makes genesis ${bytesToHex(genesis.block.hash())}`,
        );
      }
      await writer.storeGenesis(genesis);
      if (number === 0n) return { skipped: false, number: 0n, txs: 0, gasUsed: 0n };
      common.setHardforkBy({ blockNumber: number, timestamp });
    }
    const parent = writer.headHeader;
    if (!parent) throw new Error('genesis was not stored');
    if (number !== parent.number + 1n)
      throw unknownParent(source, block, `the store ends at block ${parent.number}`);
    try {
      return await this.executeAndStore(block, parent, source);
    } catch (e) {
      await writer.discard();
      throw e;
    }
  }

  private async checkStored(hash: Uint8Array, number: bigint, source: string): Promise<Outcome> {
    await this.writer.flush();
    const stored = await this.writer.store.getCanonicalHash(number);
    if (stored && equalsBytes(stored, hash)) return { skipped: true, number };
    throw new UserError(
      `${source}: block ${number} (${bytesToHex(hash)}) conflicts with block ${number} already stored (${stored ? bytesToHex(stored) : 'none'}); refusing to import a different chain into this datadir`,
    );
  }

  /**
   * Block 0 and its state: the spec's own genesis, or the file's block 0 — checked against the spec,
   * or taken as given when state roots are not verified (dev nodes write their own genesis root).
   */
  private async genesis(
    fromFile: Block | null,
    source: string,
  ): Promise<{ block: Block; stateRoot: Uint8Array }> {
    const ours = await this.writer.prepareGenesis();
    if (fromFile && this.verifyStateRoot && !equalsBytes(fromFile.hash(), ours.block.hash())) {
      throw new UserError(
        `${source}: block 0 (${bytesToHex(fromFile.hash())}) is not the genesis of the given genesis file (${bytesToHex(ours.block.hash())})${describeHeaderDifference(fromFile.header, ours.block.header)}`,
      );
    }
    return { block: fromFile ?? ours.block, stateRoot: ours.stateRoot };
  }

  private async executeAndStore(block: Block, parent: BlockHeader, source: string): Promise<Outcome> {
    const header = block.header;
    const fail: CheckFailure = (check, have, want) =>
      new UserError(
        `${source}: block ${header.number} (${bytesToHex(block.hash())}) failed the ${check} check: header has ${show(have)}, expected ${show(want)}`,
      );
    const common = this.writer.common;
    checkHeaderAgainstParent(block, parent, common, !this.verifyStateRoot, fail);
    try {
      await block.validateData(false, true);
      if (common.isActivatedEIP(4844)) block.validateBlobTransactions(parent);
    } catch (e) {
      throw new UserError(
        `${source}: block ${header.number} (${bytesToHex(block.hash())}) is invalid: ${(e as Error).message}`,
      );
    }
    let result: BlockResult;
    try {
      result = await this.writer.execute(block);
    } catch (e) {
      throw new UserError(
        `${source}: block ${header.number} (${bytesToHex(block.hash())}) failed to execute: ${(e as Error).message}`,
      );
    }
    checkExecution(header, result, this.verifyStateRoot, fail);
    await this.writer.commit(
      block,
      result.stateRoot,
      renderReceipts(block, result.receipts, result.encodedReceipts),
    );
    return { skipped: false, number: header.number, txs: block.transactions.length, gasUsed: header.gasUsed };
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

function unknownParent(source: string, block: Block, why: string): UserError {
  return new UserError(
    `${source}: block ${block.header.number} (${bytesToHex(block.hash())}) has an unknown parent ${bytesToHex(block.header.parentHash)}: ${why}`,
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

import type { Block } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { equalsBytes } from '@ethereumjs/util';
import { Forks } from '../chain/forks.ts';
import type { ChainSpec } from '../chain/genesis.ts';
import { decodeStoredBlock } from '../chain/header.ts';
import { checkSchema } from '../chain/storedSpec.ts';
import { metElsewhere } from '../core/caught.ts';
import {
  describeForLog,
  LimitExceeded,
  Unavailable,
  UpstreamAnswerInvalid,
  UpstreamError,
  UserError,
} from '../core/errors.ts';
import type { LogLine } from '../core/log.ts';
import { quantityToHex, toHex } from '../primitives/hex.ts';
import { checkStore } from '../store/lmdb/check.ts';
import { openLmdbStore } from '../store/lmdb/index.ts';
import type { BlockRef, ChainStore } from '../store/types.ts';
import { allAttemptsMs, UpstreamClient, type UpstreamLimits } from '../upstream/client.ts';
import { NewHeadsDoorbell } from '../upstream/newHeads.ts';
import { UPSTREAM_CHAIN_META } from '../upstream/open.ts';
import { fetchUncleHeaders } from '../upstream/uncles.ts';
import { blockFromRpc, headerFromRpc } from '../upstream/verify.ts';
import { Importer } from './importer.ts';

/**
 * Blocks asked for in one JSON-RPC batch while catching up: a round trip is shared by this many
 * blocks, and a batch of full mainnet blocks (~150 KB of JSON each) stays near 5 MB, well under the
 * answer limits of providers and of ethtrace itself (32 MiB). Two batches are held at most: the one
 * executing and the next, fetched meanwhile.
 */
export const FOLLOW_BATCH_BLOCKS = 32;

/**
 * The deepest reorg followed: as many blocks as the chain events remember to announce as removed
 * (REORG_WINDOW in src/services/events.ts), far past any proof-of-stake reorg short of a finality
 * failure. The blocks unwound are held in memory until the new branch has passed its checks.
 */
export const MAX_REORG_DEPTH = 128;

/** Headers asked for per round trip while looking for the common ancestor of a reorg. */
const ANCESTOR_BATCH = 32;
/** While the upstream cannot be read, the wait between tries doubles from the poll interval up to this. */
const MAX_RETRY_MS = 30_000;
/** While catching up, a progress line at most this often (in step, one line per block or segment). */
const PROGRESS_EVERY_MS = 10_000;

/** How `ethtrace start --upstream URL --follow --genesis FILE` follows (flags → this, src/main.ts). */
export interface FollowConfig {
  /** Tried in order; a failing one is skipped until it answers again. */
  urls: string[];
  limits: UpstreamLimits;
  /** How often the upstream's head is asked for once in step with it. */
  pollMs: number;
  /** The chain's genesis file: its rules, and its genesis block, which the upstream's must be. */
  genesis: ChainSpec;
  /** False for chains of dev nodes (anvil) whose state roots are not the canonical ones. */
  verifyStateRoot: boolean;
  batchBlocks?: number;
  maxReorgDepth?: number;
}

/** What a follower is doing, for logs and tests. */
export interface FollowStatus {
  head: BlockRef | null;
  /** The upstream's head as last seen. */
  upstream: BlockRef | null;
  inStep: boolean;
  /** Why following stopped, when it stopped on an error. */
  error: Error | null;
}

/**
 * Opens a datadir to follow an upstream's chain into: an ordinary imported-chain datadir (a later
 * `start` without --follow serves it, `import` adds to it), never an upstream's cache or a dev
 * chain, and of the chain of the genesis file. The upstream is checked to serve that chain before
 * anything is served: its chain id, and its block 0 against the datadir's (or, on an empty datadir,
 * against the genesis file's, as `import` checks a file's block 0). An upstream that cannot be
 * reached is tolerated when the datadir holds a chain to serve meanwhile; it is checked when it answers.
 */
export async function openFollow(
  datadir: string,
  config: FollowConfig,
  log: LogLine,
): Promise<{ store: ChainStore; follower: Follower }> {
  const store = await openLmdbStore(datadir);
  let client: UpstreamClient | null = null;
  try {
    await checkStore(store, datadir);
    await checkSchema(store, datadir);
    if ((await store.getMeta(UPSTREAM_CHAIN_META)) !== null)
      throw new UserError(
        `${datadir} caches the chain of an upstream node (start --upstream without --follow): give --follow another --datadir`,
      );
    // The dev chain's record, written by `ethtrace start` when it makes one (src/main.ts).
    if ((await store.getMeta('dev')) !== null)
      throw new UserError(`${datadir} holds a dev chain: give --follow another --datadir`);
    // Following is no client's request: a read waits out all its attempts, not a request's budget.
    client = new UpstreamClient(
      config.urls,
      { ...config.limits, budgetMs: allAttemptsMs(config.limits) },
      log,
    );
    const follower = await Follower.open(store, client, config, log);
    await follower.contact(datadir);
    return { store, follower };
  } catch (e) {
    await client?.close();
    await store.close();
    throw e;
  }
}

/**
 * Keeps the datadir's chain in step with an upstream node's: every block is fetched (in JSON-RPC
 * batches of full blocks, each checked against its hash by blockFromRpc), then executed, verified
 * and stored by the importer exactly as a block of a chain file is (state root included unless told
 * otherwise), one store transaction per block. Once at the upstream's head, its head is asked for
 * every poll interval.
 *
 * A reorg (the upstream's block at a height we hold differs from ours, or its next block is not the
 * child of our head) is followed by unwinding to the common ancestor and importing the upstream's
 * branch, at most MAX_REORG_DEPTH blocks deep. An upstream that is behind us (another URL lagging,
 * a node that went back without new blocks yet) is waited for, not followed backwards.
 *
 * Faults: an upstream that cannot be read is tried again with backoff (logged once until it
 * answers), the stored chain being served meanwhile. A block that fails a check stops following with
 * one logged line naming the block, the check and both values, and leaves the store as it was: a
 * failing block is never stored, and when it was part of a reorg's new branch, the blocks unwound
 * for it are put back.
 */
export class Follower {
  private readonly forks: Forks;
  private readonly rules: (number: bigint, timestamp: bigint) => Common;
  private readonly batchBlocks: number;
  private readonly maxReorgDepth: number;
  private stopping = false;
  private running: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private doorbell: NewHeadsDoorbell | null = null;
  private identityChecked = false;
  /** The upstream's head as last seen; asked for again once our head reaches it. */
  private target: BlockRef | null = null;
  /** The next segment, fetched while the one before it executes. */
  private ahead: { from: bigint; blocks: Promise<Block[]> } | null = null;
  private inStep = false;
  private catchingUp = false;
  /** Our head when the catch-up under way began (eth_syncing's startingBlock). */
  private catchUpFrom = 0n;
  private error: Error | null = null;
  private readonly progress = { blocks: 0, txs: 0, gas: 0n, started: 0, lastLine: 0 };

  private constructor(
    private readonly importer: Importer,
    private readonly store: ChainStore,
    private readonly client: UpstreamClient,
    private readonly config: FollowConfig,
    private readonly log: LogLine,
  ) {
    this.forks = new Forks(config.genesis);
    this.rules = (number, timestamp) => this.forks.commonAt(number, timestamp);
    this.batchBlocks = config.batchBlocks ?? FOLLOW_BATCH_BLOCKS;
    this.maxReorgDepth = config.maxReorgDepth ?? MAX_REORG_DEPTH;
  }

  static async open(
    store: ChainStore,
    client: UpstreamClient,
    config: FollowConfig,
    log: LogLine,
  ): Promise<Follower> {
    const importer = await Importer.open({
      store,
      spec: config.genesis,
      verifyStateRoot: config.verifyStateRoot,
    });
    return new Follower(importer, store, client, config, log);
  }

  /**
   * The first look at the upstream (see openFollow): a UserError when it serves another chain, or
   * cannot be reached while the datadir holds nothing to serve.
   */
  async contact(datadir: string): Promise<void> {
    try {
      await this.checkIdentity();
    } catch (e) {
      // An answer that failed its check at start is the user's to act on, as a wrong flag is.
      if (e instanceof Unavailable && !isTransient(e)) throw new UserError(e.message);
      if (!isTransient(e)) throw e;
      const head = await this.store.getHead();
      if (head === null)
        throw new UserError(
          `the upstream cannot be read, and ${datadir} holds no chain to serve meanwhile: ${(e as Error).message}`,
        );
      this.log(
        `following: the upstream cannot be read (${(e as Error).message}); serving the blocks stored (head ${head.number}) and trying again`,
        'warn',
      );
    }
  }

  /** Starts following, in the background. */
  start(): void {
    if (this.running !== null) return;
    this.progress.started = performance.now();
    // A ws(s):// upstream's newHeads wakes the poll at once; polling goes on beside it.
    const subscribeUrl = this.config.urls.find((url) => /^wss?:\/\//i.test(url));
    if (subscribeUrl !== undefined) {
      this.doorbell = new NewHeadsDoorbell(subscribeUrl, () => this.wake?.(), this.log);
      this.doorbell.start();
    }
    this.running = this.run().catch((e: unknown) => {
      this.error = e instanceof Error ? e : new Error(String(e));
    });
  }

  /** Stops following: a block being stored is finished first; fetches under way are abandoned. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.doorbell?.stop();
    this.wake?.();
    await this.client.close();
    await this.running;
  }

  status(): FollowStatus {
    return { head: this.importer.head, upstream: this.target, inStep: this.inStep, error: this.error };
  }

  /**
   * The catch-up under way, as eth_syncing tells it: the block it began at, our head, and the
   * upstream's head as last seen; null when in step (or stopped on an error, or not begun).
   */
  syncing(): { startingBlock: bigint; currentBlock: bigint; highestBlock: bigint } | null {
    const head = this.importer.head;
    if (!this.catchingUp || this.error !== null || head === null || this.target === null) return null;
    return {
      startingBlock: this.catchUpFrom,
      currentBlock: head.number,
      // Our head passes the upstream's as last seen when a reorg took it back: the highest is ours then.
      highestBlock: max(this.target.number, head.number),
    };
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      try {
        if (!this.identityChecked) await this.checkIdentity();
        const moved = await this.step();
        if (failures > 0) this.log('following: the upstream answers again');
        failures = 0;
        if (!moved) await this.sleep(this.config.pollMs);
      } catch (e) {
        this.dropAhead();
        if (this.stopping) return;
        if (isTransient(e)) {
          if (failures === 0)
            this.log(
              `following: the upstream cannot be read (trying again, logged once until it answers): ${(e as Error).message}`,
              'warn',
            );
          failures++;
          await this.sleep(Math.min(MAX_RETRY_MS, this.config.pollMs * 2 ** Math.min(failures, 16)));
          continue;
        }
        this.stopOn(e);
        throw e;
      }
    }
  }

  /** One move towards the upstream's head; false when there was nothing to do. */
  private async step(): Promise<boolean> {
    const ours = this.importer.head;
    if (ours === null) throw new Error('following a datadir without its genesis block');
    if (this.target === null || ours.number >= this.target.number) this.target = await this.upstreamHead();
    const target = this.target;
    if (target.number <= ours.number) {
      const mine = await this.store.getCanonicalHash(target.number);
      // In step; or the upstream is behind us on our own chain, and is waited for.
      if (mine !== null && equalsBytes(mine, target.hash)) {
        this.reachedHead(ours);
        return false;
      }
      return this.reorganise(ours, target);
    }
    const from = ours.number + 1n;
    const to = min(target.number, ours.number + BigInt(this.batchBlocks));
    const blocks = await this.takeBlocks(from, to);
    const first = blocks[0];
    if (first === undefined) {
      // The upstream has no block past ours any more (it went back, or a lagging URL answered):
      // its head is asked for again.
      this.target = null;
      return false;
    }
    if (!equalsBytes(first.header.parentHash, ours.hash)) return this.reorganise(ours, target);
    if (to < target.number) this.prefetch(to + 1n, min(target.number, to + BigInt(this.batchBlocks)));
    if (!this.catchingUp && (!this.inStep || target.number - ours.number > BigInt(this.batchBlocks))) {
      this.catchingUp = true;
      this.catchUpFrom = ours.number;
      this.inStep = false;
      Object.assign(this.progress, { blocks: 0, txs: 0, gas: 0n, started: performance.now(), lastLine: 0 });
      this.log(`following: catching up from block ${ours.number} to the upstream's block ${target.number}`);
    }
    await this.importSegment(blocks, target);
    return true;
  }

  /** Imports blocks in order, each the child of the head; a block that is not ends the segment. */
  private async importSegment(blocks: readonly Block[], target: BlockRef): Promise<void> {
    const imported: Block[] = [];
    for (const block of blocks) {
      // A stop need not wait for a whole segment of blocks to execute.
      if (this.stopping) break;
      const head = this.importer.head;
      if (head === null || !equalsBytes(block.header.parentHash, head.hash)) {
        // The upstream reorganised while the segment was fetched: the next step looks again.
        this.dropAhead();
        this.target = null;
        break;
      }
      await this.importer.importDecoded(block, `upstream block ${block.header.number}`);
      imported.push(block);
      this.progress.blocks++;
      this.progress.txs += block.transactions.length;
      this.progress.gas += block.header.gasUsed;
    }
    this.report(imported, target);
  }

  /**
   * The upstream's chain left ours: unwind to the common ancestor and import the upstream's branch.
   * Its first segment is fetched and checked against its hashes before anything is unwound; should
   * one of its blocks then fail execution, the blocks unwound are imported again.
   */
  private async reorganise(ours: BlockRef, target: BlockRef): Promise<boolean> {
    this.dropAhead();
    const ancestor = await this.commonAncestor(ours, target);
    const to = min(target.number, ancestor.number + BigInt(this.batchBlocks));
    const fresh = linkedTo(ancestor, await this.fetchBlocks(ancestor.number + 1n, to));
    if (fresh.length === 0) {
      // The upstream moved again since its head was read: look again.
      this.target = null;
      return false;
    }
    const depth = ours.number - ancestor.number;
    // The upstream's head moved on from ours between two reads: no block of ours left its chain.
    if (depth === 0n) {
      await this.importSegment(fresh, target);
      return true;
    }
    const unwound = await this.storedBlocks(ancestor.number + 1n, ours.number);
    this.log(
      `following: reorg on the upstream: ${depth === 1n ? `block ${ours.number}` : `blocks ${ancestor.number + 1n}–${ours.number}`} of ours ${depth === 1n ? 'is' : 'are'} not on its chain; unwinding to the common block ${ancestor.number} (${toHex(ancestor.hash)}) and following its branch`,
    );
    await this.importer.rewindTo(ancestor.number);
    try {
      for (const block of fresh)
        await this.importer.importDecoded(block, `upstream block ${block.header.number}`);
    } catch (e) {
      await this.putBack(ancestor.number, unwound);
      throw e;
    }
    const head = this.importer.head as BlockRef;
    this.log(`following: on the upstream's branch at block ${head.number} (${toHex(head.hash)})`);
    return true;
  }

  /** The blocks a failed reorg unwound, imported again: the store is then as it was before the reorg. */
  private async putBack(ancestor: bigint, unwound: readonly Block[]): Promise<void> {
    try {
      await this.importer.rewindTo(ancestor);
      for (const block of unwound)
        await this.importer.importDecoded(block, `stored block ${block.header.number}`);
    } catch (e) {
      this.log(
        `following: putting back the blocks unwound failed; the store ends at block ${this.importer.head?.number}: ${describeForLog(e)}`,
        'warn',
      );
    }
  }

  /**
   * The newest block both chains hold: our canonical hashes against the upstream's, from the lower
   * of the two heads down, a batch of headers per round trip.
   */
  private async commonAncestor(ours: BlockRef, target: BlockRef): Promise<BlockRef> {
    const depth = BigInt(this.maxReorgDepth);
    const floor = ours.number > depth ? ours.number - depth : 0n;
    let top = min(ours.number, target.number);
    while (top >= floor) {
      const low = top - BigInt(ANCESTOR_BATCH) + 1n > floor ? top - BigInt(ANCESTOR_BATCH) + 1n : floor;
      const numbers: bigint[] = [];
      for (let n = top; n >= low; n--) numbers.push(n);
      const outcomes = await this.client.batch(
        numbers.map((n) => ({ method: 'eth_getBlockByNumber', params: [quantityToHex(n), false] })),
      );
      for (const [i, n] of numbers.entries()) {
        const outcome = outcomes[i];
        if (!outcome?.ok)
          throw new Unavailable(
            `the upstream did not give block ${n}: ${outcome ? outcome.error.message : 'no answer'}`,
          );
        // Past the upstream's head now: its chain is shorter than ours.
        if (outcome.result === null) continue;
        const hash = headerFromRpc(outcome.result, this.rules, n).hash();
        const mine = await this.store.getCanonicalHash(n);
        if (mine !== null && equalsBytes(mine, hash)) return { number: n, hash };
      }
      if (low === floor) break;
      top = low - 1n;
    }
    throw new UserError(
      `the upstream's chain has no block in common with ours from block ${floor} to our head ${ours.number} (${toHex(ours.hash)}): a reorg deeper than ${this.maxReorgDepth} blocks is not followed; check that the upstream serves this chain, or follow into a new --datadir`,
    );
  }

  /** The upstream's chain id and block 0 against the genesis file and the datadir (see openFollow). */
  private async checkIdentity(): Promise<void> {
    const spec = this.config.genesis;
    const [chainIdHex, json] = await Promise.all([
      this.client.request<unknown>('eth_chainId', []),
      this.client.request<unknown>('eth_getBlockByNumber', ['0x0', true]),
    ]);
    const chainId =
      typeof chainIdHex === 'string' && /^0x[0-9a-fA-F]+$/.test(chainIdHex) ? BigInt(chainIdHex) : null;
    if (chainId === null) throw new UserError(`the upstream's chain id is ${JSON.stringify(chainIdHex)}`);
    if (chainId !== spec.chainId)
      throw new UserError(`--genesis is chain ${spec.chainId}, the upstream serves chain ${chainId}`);
    if (json === null) throw new UserError('the upstream serves no block 0: is it a full node of the chain?');
    const block0 = await blockFromRpc(json, this.rules, 0n);
    const stored = await this.store.getCanonicalHash(0n);
    if (stored === null) {
      // Checked against the genesis file's block 0, or taken as given without state-root checks.
      await this.importer.importDecoded(block0, 'the upstream');
    } else if (!equalsBytes(stored, block0.hash())) {
      throw new UserError(
        `the datadir holds the chain with genesis ${toHex(stored)}, the upstream serves the one with genesis ${toHex(block0.hash())}: give another --datadir`,
      );
    }
    this.identityChecked = true;
  }

  /** The upstream's head block, its header checked against its hash. */
  private async upstreamHead(): Promise<BlockRef> {
    const json = await this.client.request<unknown>('eth_getBlockByNumber', ['latest', false]);
    if (json === null) throw new Unavailable('the upstream has no latest block');
    const header = headerFromRpc(json, this.rules);
    return { number: header.number, hash: header.hash() };
  }

  /** Blocks `from`..`to` as fetched ahead, or fetched now. */
  private takeBlocks(from: bigint, to: bigint): Promise<Block[]> {
    const ahead = this.ahead;
    this.ahead = null;
    if (ahead !== null && ahead.from === from) return ahead.blocks;
    return this.fetchBlocks(from, to);
  }

  private prefetch(from: bigint, to: bigint): void {
    const blocks = this.fetchBlocks(from, to);
    // A fetch ahead that fails is fetched again when its turn comes, and its fault met then.
    metElsewhere(blocks);
    this.ahead = { from, blocks };
  }

  private dropAhead(): void {
    this.ahead = null;
  }

  /**
   * Full blocks `from`..`to` in one batch (their uncles in one more), each checked against its hash
   * and its number; the list ends where the upstream has no block (past its head).
   */
  private async fetchBlocks(from: bigint, to: bigint): Promise<Block[]> {
    const numbers: bigint[] = [];
    for (let n = from; n <= to; n++) numbers.push(n);
    const outcomes = await this.client.batch(
      numbers.map((n) => ({ method: 'eth_getBlockByNumber', params: [quantityToHex(n), true] })),
    );
    const answers: Array<Record<string, unknown>> = [];
    for (const [i, outcome] of outcomes.entries()) {
      if (!outcome.ok)
        throw new Unavailable(`the upstream did not give block ${numbers[i]}: ${outcome.error.message}`);
      if (outcome.result === null) break;
      answers.push(outcome.result as Record<string, unknown>);
    }
    const uncles = await fetchUncleHeaders(this.client, answers);
    const blocks: Block[] = [];
    for (const [i, json] of answers.entries())
      blocks.push(await blockFromRpc(json, this.rules, numbers[i] as bigint, uncles[i]));
    return blocks;
  }

  /** Our canonical blocks `from`..`to`, as the store holds them. */
  private async storedBlocks(from: bigint, to: bigint): Promise<Block[]> {
    const blocks: Block[] = [];
    for (let n = from; n <= to; n++) {
      const hash = await this.store.getCanonicalHash(n);
      const header = hash && (await this.store.getHeader(hash));
      const body = hash && (await this.store.getBody(hash));
      if (!header || !body) throw new Error(`the store is missing canonical block ${n}`);
      blocks.push(decodeStoredBlock(header, body, this.rules));
    }
    return blocks;
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }

  private reachedHead(head: BlockRef): void {
    if (this.inStep) return;
    this.inStep = true;
    this.catchingUp = false;
    const { blocks, txs, gas } = this.progress;
    const seconds = (performance.now() - this.progress.started) / 1000;
    const totals =
      blocks === 0
        ? ''
        : `; ${blocks} blocks, ${txs} txs, ${gas} gas imported in ${seconds.toFixed(1)} s (${mgasPerSecond(gas, seconds)} Mgas/s)`;
    this.log(`following: in step with the upstream at block ${head.number} (${toHex(head.hash)})${totals}`);
  }

  /** In step, a line per segment imported; catching up, a progress line now and then. */
  private report(imported: readonly Block[], target: BlockRef): void {
    const last = imported.at(-1);
    if (last === undefined) return;
    if (this.inStep) {
      const first = imported[0] as Block;
      const txs = imported.reduce((sum, b) => sum + b.transactions.length, 0);
      const which =
        imported.length === 1
          ? `block ${last.header.number}`
          : `blocks ${first.header.number}–${last.header.number}`;
      this.log(`following: ${which}, ${txs} txs; head ${last.header.number} (${toHex(last.hash())})`);
      return;
    }
    const now = performance.now();
    if (now - this.progress.lastLine < PROGRESS_EVERY_MS) return;
    this.progress.lastLine = now;
    const seconds = (now - this.progress.started) / 1000;
    const share = target.number > 0n ? Number((last.header.number * 1000n) / target.number) / 10 : 100;
    this.log(
      `following: block ${last.header.number} of ${target.number} (${share.toFixed(1)}%), ${this.progress.blocks} blocks, ${this.progress.txs} txs, ${mgasPerSecond(this.progress.gas, seconds)} Mgas/s`,
    );
  }

  private stopOn(e: unknown): void {
    const head = this.importer.head;
    const kept = head ? `blocks up to ${head.number} (${toHex(head.hash)})` : 'no blocks';
    const why = e instanceof UserError || e instanceof Unavailable ? e.message : describeForLog(e);
    this.log(
      `following stopped: ${why}; the store keeps ${kept}, which are served; start again to follow on once the upstream serves the chain`,
      'warn',
    );
  }
}

/**
 * A fault that may pass: the upstream down, slow, rate limiting, or refusing a call. Not one that
 * failed a check: a wrong block stays wrong.
 */
function isTransient(e: unknown): boolean {
  if (e instanceof UpstreamAnswerInvalid) return false;
  return e instanceof Unavailable || e instanceof LimitExceeded || e instanceof UpstreamError;
}

/** The leading blocks that extend `parent` one by one. */
function linkedTo(parent: BlockRef, blocks: readonly Block[]): Block[] {
  const linked: Block[] = [];
  let hash = parent.hash;
  for (const block of blocks) {
    if (!equalsBytes(block.header.parentHash, hash)) break;
    linked.push(block);
    hash = block.hash();
  }
  return linked;
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

function mgasPerSecond(gas: bigint, seconds: number): string {
  return (seconds > 0 ? Number(gas) / 1e6 / seconds : 0).toFixed(1);
}

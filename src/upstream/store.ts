import type { Block } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { equalsBytes, KECCAK256_NULL, KECCAK256_RLP } from '@ethereumjs/util';
import { Forks } from '../chain/forks.ts';
import type { ChainSpec } from '../chain/genesis.ts';
import {
  decodeStoredBlock,
  HEADER_STATE_ROOT,
  headerFields,
  numberAndTime,
  type RulesAt,
  rulesOfHeader,
} from '../chain/header.ts';
import { metElsewhere } from '../core/caught.ts';
import { RequestFailed, Unavailable } from '../core/errors.ts';
import { bytesKey, quantityToHex, toHex } from '../primitives/hex.ts';
import { keccak256 } from '../primitives/keccak.ts';
import { LruCache } from '../primitives/lru.ts';
import { StoreWriteRefused } from '../store/errors.ts';
import type {
  BlockRef,
  BlockWrite,
  ChainStore,
  FetchedStateReads,
  FlatAccount,
  TxLocation,
  UpstreamCache,
  UpstreamDatadir,
} from '../store/types.ts';
import type { RpcCall, UpstreamReader } from './client.ts';
import { fetchUncleHeaders } from './uncles.ts';
import { accountFromProof, blockFromRpc, receiptsFromRpc } from './verify.ts';

/**
 * Blocks kept decoded, their senders recovered: recovering a 200-transaction block's senders takes
 * hundreds of milliseconds of this thread (measured 0.37–0.84 s on a loaded machine here), and a cold
 * block is wanted several times at once (checked when fetched, its receipts rendered, its replay's
 * pre-state read ahead).
 */
const DECODED_BLOCKS = 16;

/** Where the main thread's head tracker leaves the upstream head for every thread to read. */
export const HEAD_META = 'upstream-head';

/** The upstream's head and the newest block this service treats as final, as the head tracker saw them. */
export interface UpstreamHead {
  number: bigint;
  hash: Uint8Array;
  finalized: bigint;
}

/** What the upstream was found to offer when the service started (see discoverCapabilities). */
export interface Capabilities {
  /** `debug_traceCall` / `debug_traceBlockByHash` with geth's prestateTracer: a whole pre-state in one call. */
  prestateTracer: boolean;
  /** `eth_getBlockReceipts`; without it, one `eth_getTransactionReceipt` per transaction, batched. */
  blockReceipts: boolean;
  /** `finalized` as a block tag; without it, the head less the finality depth is final. */
  finalizedTag: boolean;
}

/** One account to read at a block, and the slots of it wanted. */
export interface StateKey {
  address: Uint8Array;
  slots: Uint8Array[];
}

/**
 * A chain store over another node (upstream mode): blocks, receipts, transactions and state are
 * read from the upstream when the datadir's cache does not hold them, checked (src/upstream/verify.ts)
 * and kept in the cache keyed by block hash, so what the rest of the service reads through the
 * ChainStore interface is the same, and checked the same, whether the chain was imported or not.
 * The head is the one the head tracker (src/upstream/head.ts) last saw; state reads are pinned to the
 * block hash each request resolved. Nothing can be written: the upstream's chain is not ours.
 */
export class UpstreamStore implements ChainStore {
  private readonly forks: Forks;
  /** Fetches under way, by what they fetch, so concurrent readers of one thing share one round trip. */
  private readonly inFlight = new Map<string, Promise<unknown>>();
  private readonly decoded = new LruCache<string, Block>(DECODED_BLOCKS);
  /** The canonical hashes of recent, unfinal blocks this thread looked up, for the head they hold for. */
  private recent: { head: string; hashes: Map<bigint, Uint8Array> } = { head: '', hashes: new Map() };

  /** What the datadir caches: blocks and receipts read as a chain store's (see UpstreamDatadir). */
  private readonly local: ChainStore;
  /** The cache's own writes and reads: state values, final hashes, blocks a reorg removed. */
  readonly cache: UpstreamCache;

  constructor(
    datadir: UpstreamDatadir,
    readonly client: UpstreamReader,
    spec: ChainSpec,
    readonly capabilities: Capabilities,
  ) {
    this.local = datadir.chain;
    this.cache = datadir.cache;
    this.forks = new Forks(spec);
    this.rules = (number, timestamp) => this.forks.commonAt(number, timestamp);
  }

  /** The chain's rules by block, for the verifier. */
  private readonly rules: RulesAt;

  /**
   * The state root a proof at block `number` is checked against: the block's own, except at a
   * genesis whose header carries the empty-trie root whatever its alloc (anvil's, and so an anvil
   * chain imported without state-root checks): there the header names no root, and the proof can
   * only be checked to be a consistent path from its first node.
   */
  private rootFor(number: bigint, stateRoot: Uint8Array, proof: unknown): Uint8Array {
    if (number !== 0n || !equalsBytes(stateRoot, KECCAK256_RLP)) return stateRoot;
    const first = (proof as { accountProof?: unknown } | null)?.accountProof;
    const node = Array.isArray(first) && typeof first[0] === 'string' ? first[0] : null;
    return node === null ? stateRoot : keccak256(Buffer.from(node.slice(2), 'hex'));
  }

  /** The head and finality the head tracker last recorded; null before its first look. */
  async upstreamHead(): Promise<UpstreamHead | null> {
    // The datadir's own head read renews this thread's read snapshot, so the record is the newest.
    await this.local.getHead();
    const record = await this.local.getMeta(HEAD_META);
    if (record === null) return null;
    const { number, hash, finalized } = JSON.parse(new TextDecoder().decode(record)) as Record<
      string,
      string
    >;
    return {
      number: BigInt(number as string),
      hash: Buffer.from((hash as string).slice(2), 'hex'),
      finalized: BigInt(finalized as string),
    };
  }

  async getHead(): Promise<BlockRef | null> {
    const head = await this.upstreamHead();
    return head && { number: head.number, hash: head.hash };
  }

  /** `finalized` is the newest final block; `safe` is taken to be the same (no deeper reorg is assumed). */
  async getTaggedBlock(): Promise<BlockRef | null> {
    const head = await this.upstreamHead();
    if (!head) return null;
    const hash = await this.getCanonicalHash(head.finalized);
    return hash && { number: head.finalized, hash };
  }

  async getCanonicalHash(number: bigint): Promise<Uint8Array | null> {
    // Only final blocks' hashes are kept, and a final block stays canonical (no deeper reorg is
    // assumed), so a kept hash needs no head: reading the head record first (a fresh read snapshot,
    // a lookup and a JSON parse, ~10 µs) was most of what made a cached block's receipts slower
    // here than on an imported chain (docs/upstream.md, Speed).
    const cached = await this.cache.getCachedCanonical(number);
    if (cached) return cached;
    const head = await this.upstreamHead();
    if (!head || number > head.number) return null;
    if (number === head.number) return head.hash;
    const headKey = bytesKey(head.hash);
    if (this.recent.head !== headKey) this.recent = { head: headKey, hashes: new Map() };
    const known = this.recent.hashes.get(number);
    if (known) return known;
    const block = await this.fetchBlock({ number });
    if (block === null) return null;
    const hash = block.hash();
    if (number <= head.finalized) await keep(() => this.cache.putCanonical(number, hash));
    else this.recent.hashes.set(number, hash);
    return hash;
  }

  async getBlockNumber(hash: Uint8Array): Promise<bigint | null> {
    const cached = await this.local.getBlockNumber(hash);
    if (cached !== null) return cached;
    return (await this.fetchBlock({ hash }))?.header.number ?? null;
  }

  async getHeader(hash: Uint8Array): Promise<Uint8Array | null> {
    const cached = await this.local.getHeader(hash);
    if (cached !== null || (await this.fetchBlock({ hash })) === null) return cached;
    return this.local.getHeader(hash);
  }

  async getBody(hash: Uint8Array): Promise<Uint8Array | null> {
    const cached = await this.local.getBody(hash);
    if (cached !== null || (await this.fetchBlock({ hash })) === null) return cached;
    return this.local.getBody(hash);
  }

  async getStateRoot(hash: Uint8Array): Promise<Uint8Array | null> {
    const header = await this.getHeader(hash);
    if (header === null) return null;
    return headerFields(header)[HEADER_STATE_ROOT] ?? null;
  }

  async getTxLocation(txHash: Uint8Array): Promise<TxLocation | null> {
    const cached = await this.local.getTxLocation(txHash);
    if (cached) return cached;
    const tx = await this.client.request<{ blockHash?: string | null } | null>('eth_getTransactionByHash', [
      toHex(txHash),
    ]);
    // Unknown, or pending: not in a block yet.
    if (!tx || typeof tx.blockHash !== 'string') return null;
    const block = await this.fetchBlock({ hash: Buffer.from(tx.blockHash.slice(2), 'hex') });
    if (!block) return null;
    // The block, checked, says where the transaction is; what the upstream said of it is not trusted.
    return this.local.getTxLocation(txHash);
  }

  async getReceipts(blockHash: Uint8Array): Promise<Uint8Array[] | null> {
    const cached = await this.local.getReceipts(blockHash);
    if (cached !== null || !(await this.fetchReceipts(blockHash))) return cached;
    return this.local.getReceipts(blockHash);
  }

  async getBlockReceiptsJson(blockHash: Uint8Array): Promise<Uint8Array | null> {
    const cached = await this.local.getBlockReceiptsJson(blockHash);
    if (cached !== null || !(await this.fetchReceipts(blockHash))) return cached;
    return this.local.getBlockReceiptsJson(blockHash);
  }

  async getReceiptJson(blockHash: Uint8Array, index: number): Promise<Uint8Array | null> {
    const cached = await this.local.getReceiptJson(blockHash, index);
    if (cached !== null || !(await this.fetchReceipts(blockHash))) return cached;
    return this.local.getReceiptJson(blockHash, index);
  }

  /** The state trie is the upstream's: proofs are its own (eth_getProof is passed through, checked). */
  async getTrieNode(): Promise<Uint8Array | null> {
    return null;
  }

  async getCode(codeHash: Uint8Array): Promise<Uint8Array | null> {
    return this.local.getCode(codeHash);
  }

  async getAccountAt(
    address: Uint8Array,
    number: bigint,
    blockHash?: Uint8Array,
  ): Promise<FlatAccount | null> {
    const hash = blockHash ?? (await this.canonical(number));
    const cached = await this.cache.getCachedAccount(hash, address);
    if (cached !== undefined) return cached;
    await this.fetchState(hash, [{ address, slots: [] }]);
    const fetched = await this.cache.getCachedAccount(hash, address);
    if (fetched === undefined) throw new Error('an account fetched is not in the cache');
    return fetched;
  }

  async getStorageAt(
    address: Uint8Array,
    slot: Uint8Array,
    number: bigint,
    blockHash?: Uint8Array,
  ): Promise<Uint8Array> {
    const hash = blockHash ?? (await this.canonical(number));
    const cached = await this.cache.getCachedStorage(hash, address, slot);
    if (cached !== null) return cached;
    await this.fetchState(hash, [{ address, slots: [slot] }]);
    const fetched = await this.cache.getCachedStorage(hash, address, slot);
    if (fetched === null) throw new Error('a slot fetched is not in the cache');
    return fetched;
  }

  /** What the cache holds, read synchronously by the EVM of src/evm; the rest fetched as fetchState does. */
  readonly fetchedReads: FetchedStateReads = {
    accountAt: (blockHash, address) => this.cache.getCachedAccountSync(blockHash, address),
    storageAt: (blockHash, address, slot) => this.cache.getCachedStorageSync(blockHash, address, slot),
    code: (codeHash) => this.local.getCodeSync?.(codeHash) ?? null,
    fetch: (blockHash, keys) => this.fetchState(blockHash, keys),
  };

  getMeta(key: string): Promise<Uint8Array | null> {
    return this.local.getMeta(key);
  }

  putMeta(key: string, value: Uint8Array): Promise<void> {
    return this.local.putMeta(key, value);
  }

  async commitBlock(_write: BlockWrite): Promise<void> {
    throw new Error("an upstream chain is read-only here: blocks are the upstream's");
  }

  async unwindTo(): Promise<void> {
    throw new Error("an upstream chain is read-only here: blocks are the upstream's");
  }

  async close(): Promise<void> {
    await this.client.close();
    await this.local.close();
  }

  /**
   * Reads these accounts and slots at block `blockHash` into the cache, with one batch of
   * eth_getProof (and eth_getCode for the code not yet kept), each proof checked against the block's
   * state root. Keys already cached are not asked for again.
   */
  async fetchState(blockHash: Uint8Array, keys: readonly StateKey[]): Promise<void> {
    const header = await this.getHeader(blockHash);
    if (header === null) throw new Unavailable(`upstream block ${toHex(blockHash)} is not available`);
    const fields = headerFields(header);
    const stateRoot = fields[HEADER_STATE_ROOT] ?? new Uint8Array();
    const { number: blockNumber, timestamp } = numberAndTime(fields);
    const clearsEmpty = this.forks.commonAt(blockNumber, timestamp).gteHardfork('spuriousDragon');
    const wanted: StateKey[] = [];
    for (const { address, slots } of keys) {
      const account = await this.cache.getCachedAccount(blockHash, address);
      const missing: Uint8Array[] = [];
      for (const slot of slots)
        if ((await this.cache.getCachedStorage(blockHash, address, slot)) === null) missing.push(slot);
      if (account === undefined || missing.length > 0) wanted.push({ address, slots: missing });
    }
    if (wanted.length === 0) return;
    const at = { blockHash: toHex(blockHash) };
    const proofCalls: RpcCall[] = wanted.map(({ address, slots }) => ({
      method: 'eth_getProof',
      params: [toHex(address), slots.map(toHex), at],
    }));
    // Code is asked for at once for every account (one round trip), and kept only when its hash checks.
    const codeCalls: RpcCall[] = wanted.map(({ address }) => ({
      method: 'eth_getCode',
      params: [toHex(address), at],
    }));
    const outcomes = await this.client.batch([...proofCalls, ...codeCalls]);
    const accounts: Array<{ address: Uint8Array; account: FlatAccount | null }> = [];
    const storage: Array<{ address: Uint8Array; slot: Uint8Array; value: Uint8Array }> = [];
    const code: Array<[Uint8Array, Uint8Array]> = [];
    wanted.forEach(({ address }, i) => {
      const proof = outcomes[i];
      const codeAnswer = outcomes[wanted.length + i];
      if (!proof?.ok)
        throw new Unavailable(`upstream eth_getProof failed for ${toHex(address)}: ${describe(proof)}`);
      const codeBytes =
        codeAnswer?.ok && typeof codeAnswer.result === 'string'
          ? Buffer.from(codeAnswer.result.slice(2), 'hex')
          : undefined;
      const checked = accountFromProof(
        this.rootFor(blockNumber, stateRoot, proof.result),
        address,
        proof.result,
        {
          slots: wanted[i]?.slots ?? [],
          ...(codeBytes ? { code: codeBytes } : {}),
        },
      );
      const a = checked.account;
      // An empty account is no account from EIP-161 on (a touched one is deleted); anvil keeps some
      // in its state (a reverted creation's, the precompiles'), which a correct node would not.
      const empty =
        a !== null &&
        a.nonce === 0n &&
        a.balance === 0n &&
        equalsBytes(a.codeHash, KECCAK256_NULL) &&
        equalsBytes(a.storageRoot, KECCAK256_RLP);
      accounts.push({
        address,
        account:
          a === null || (empty && clearsEmpty)
            ? null
            : { nonce: a.nonce, balance: a.balance, codeHash: a.codeHash },
      });
      for (const { slot, value } of checked.storage) storage.push({ address, slot, value });
      if (checked.account && codeBytes && codeBytes.length > 0)
        code.push([checked.account.codeHash, codeBytes]);
    });
    await keep(() => this.cache.putState(blockHash, { accounts, storage, code }));
  }

  /** The rules of block `blockHash` (its header from the cache, else fetched); null when the upstream has none. */
  async rulesOf(blockHash: Uint8Array): Promise<Common | null> {
    const header = await this.getHeader(blockHash);
    if (header === null) return null;
    return rulesOfHeader(headerFields(header), this.rules);
  }

  /** A block of the upstream's chain as ethereumjs holds it (from the cache, else fetched and checked). */
  async block(hash: Uint8Array): Promise<Block | null> {
    const key = bytesKey(hash);
    const kept = this.decoded.get(key);
    if (kept !== undefined) return kept;
    const [header, body] = await Promise.all([this.getHeader(hash), this.getBody(hash)]);
    if (!header || !body) return null;
    // Fetched meanwhile: the checked block, whose senders are known, is the one to keep.
    const fetched = this.decoded.get(key);
    if (fetched !== undefined) return fetched;
    const block = decodeStoredBlock(header, body, this.rules);
    this.decoded.set(key, block);
    return block;
  }

  private async canonical(number: bigint): Promise<Uint8Array> {
    const hash = await this.getCanonicalHash(number);
    if (!hash) throw new Unavailable(`upstream block ${number} is not available`);
    return hash;
  }

  /** A block by hash or number from the upstream, checked and cached; null when it has none. */
  private fetchBlock(by: { hash: Uint8Array } | { number: bigint }): Promise<Block | null> {
    const key = 'hash' in by ? `block:${bytesKey(by.hash)}` : `block#${by.number}`;
    return this.once(key, async () => {
      const json =
        'hash' in by
          ? await this.client.request<Record<string, unknown> | null>('eth_getBlockByHash', [
              toHex(by.hash),
              true,
            ])
          : await this.client.request<Record<string, unknown> | null>('eth_getBlockByNumber', [
              quantityToHex(by.number),
              true,
            ]);
      if (json === null) return null;
      const block = await this.acceptBlockJson(json, 'hash' in by ? by.hash : undefined);
      if ('number' in by && block.header.number !== by.number)
        throw new Unavailable(
          `upstream answer failed verification: block ${block.header.number} given for ${by.number}`,
        );
      return block;
    });
  }

  /** A block the upstream sent (with its transactions), checked and cached; its number and hash. */
  async acceptBlock(json: Record<string, unknown>): Promise<BlockRef> {
    const block = await this.acceptBlockJson(json);
    return { number: block.header.number, hash: block.hash() };
  }

  private async acceptBlockJson(json: Record<string, unknown>, expectedHash?: Uint8Array): Promise<Block> {
    const [uncles] = await fetchUncleHeaders(this.client, [json]);
    const block = await blockFromRpc(json, this.rules, expectedHash, uncles);
    const hash = block.hash();
    this.decoded.set(bytesKey(hash), block);
    if ((await this.local.getBlockNumber(hash)) === null) {
      await keep(() =>
        this.cache.putBlock({
          number: block.header.number,
          hash,
          header: block.header.serialize(),
          body: RLP.encode(block.raw().slice(1)),
          txHashes: block.transactions.map((tx) => tx.hash()),
        }),
      );
    }
    return block;
  }

  /** The block's receipts from the upstream, checked against its header, rendered and cached. */
  private fetchReceipts(blockHash: Uint8Array): Promise<boolean> {
    return this.once(`receipts:${bytesKey(blockHash)}`, async () => {
      // With eth_getBlockReceipts the receipts are asked for beside the block: one round trip, not two.
      const byBlock = this.capabilities.blockReceipts
        ? this.client.request('eth_getBlockReceipts', [toHex(blockHash)])
        : null;
      // Awaited below, once the block is in.
      if (byBlock) metElsewhere(byBlock);
      const block = await this.block(blockHash);
      if (!block) return false;
      let json: unknown;
      if (byBlock) {
        json = await byBlock;
      } else {
        const outcomes = await this.client.batch(
          block.transactions.map((tx) => ({
            method: 'eth_getTransactionReceipt',
            params: [toHex(tx.hash())],
          })),
        );
        json = outcomes.map((o) => (o.ok ? o.result : null));
      }
      const { encoded, json: rendered } = await receiptsFromRpc(block, json);
      await keep(() => this.cache.putReceipts(blockHash, encoded, rendered));
      return true;
    });
  }

  private once<T>(key: string, work: () => Promise<T>): Promise<T> {
    const running = this.inFlight.get(key) as Promise<T> | undefined;
    if (running) return running;
    const started = work().finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, started);
    return started;
  }
}

/**
 * A write into the cache. One the store refuses (a full disk) fails the request that needed it with
 * -32000 saying why, not as an internal error: what is cached is still served.
 */
async function keep(write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (e) {
    if (e instanceof StoreWriteRefused)
      throw new RequestFailed(`the node cannot keep what it reads from its upstream now: ${e.reason}`);
    throw e;
  }
}

function describe(outcome: { ok: boolean; error?: { message: string } } | undefined): string {
  if (!outcome) return 'no answer';
  return outcome.ok ? 'no result' : (outcome.error?.message ?? 'error');
}

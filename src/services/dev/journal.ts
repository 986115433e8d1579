import { RLP } from '@ethereumjs/rlp';
import type { ChainStore } from '../../store/types.ts';
import type { PendingPool } from './pool.ts';

/** Where the pending pool is kept in the store, so that it survives a restart and a crash. */
const POOL_JOURNAL_META = 'dev-pool';

/**
 * The pending pool written to the store (the transactions in arrival order) whenever it changed,
 * as geth journals its local transactions. A transaction is acknowledged after the journal is
 * written, so a pending one survives SIGTERM and kill -9 alike; one already mined when the journal
 * was last written is dropped on restore as its nonce is used.
 */
export class PoolJournal {
  private journaledVersion = 0;
  /** What the journal holds, once read or written. */
  private written: Uint8Array | null = null;

  constructor(private readonly store: ChainStore) {}

  /** The journaled transactions, encoded, as the last run left them. */
  async read(): Promise<Uint8Array[]> {
    const journal = await this.store.getMeta(POOL_JOURNAL_META);
    this.written = journal;
    return journal ? (RLP.decode(journal) as Uint8Array[]) : [];
  }

  /** Writes the pool if it changed since the last write. */
  async write(pool: PendingPool): Promise<void> {
    if (pool.version === this.journaledVersion) return;
    const version = pool.version;
    const journal = RLP.encode(pool.inArrivalOrder().map((tx) => tx.serialize()));
    // Automine pools and mines each transaction within one request: the pool is as it was.
    if (this.written === null || Buffer.compare(journal, this.written) !== 0) {
      await this.store.putMeta(POOL_JOURNAL_META, journal);
      this.written = journal;
    }
    this.journaledVersion = version;
  }
}

import { describeForLog, Unavailable } from '../core/errors.ts';
import type { LogLine } from '../core/log.ts';
import { quantityToHex, toHex } from '../primitives/hex.ts';
import { NewHeadsDoorbell } from './newHeads.ts';
import { HEAD_META, type UpstreamHead, type UpstreamStore } from './store.ts';

export interface HeadOptions {
  /** How often the upstream's head is asked for. */
  pollMs: number;
  /** Blocks behind the head after which a block is final when the upstream has no `finalized` tag. */
  finalityDepth: number;
  /** A ws(s):// upstream URL whose newHeads subscription makes a new head seen at once. */
  subscribeUrl?: string;
}

/**
 * The main thread's view of the upstream head: asked for every `pollMs` (with the finalized block,
 * in one round trip), and at once when the upstream's newHeads subscription announces a block (over
 * WebSocket, when one of the upstream URLs is one); checked (the header must hash to the block hash
 * it came with), and recorded in the datadir (HEAD_META) for every thread; new blocks and reorgs are
 * then noticed by the chain events as they are for any store. Polling goes on beside the
 * subscription, so a subscription that silently stops costs latency, not blocks.
 */
export class HeadTracker {
  private timer: NodeJS.Timeout | null = null;
  private last: UpstreamHead | null = null;
  private failing = false;
  private problem: string | null = null;
  private doorbell: NewHeadsDoorbell | null = null;
  /** The look under way, and whether another was asked for meanwhile (looks never overlap). */
  private looking: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly store: UpstreamStore,
    private readonly options: HeadOptions,
    private readonly log: LogLine = () => {},
  ) {}

  /** Looks once (failing the start if the upstream cannot answer), then keeps looking. */
  async start(): Promise<UpstreamHead> {
    const head = await this.look();
    this.timer = setInterval(() => this.poll(), this.options.pollMs);
    this.timer.unref();
    if (this.options.subscribeUrl !== undefined) {
      this.doorbell = new NewHeadsDoorbell(this.options.subscribeUrl, () => this.poll(), this.log);
      this.doorbell.start();
    }
    return head;
  }

  /** Why the last look at the upstream's head failed (it cannot be reached), or null when it answered. */
  unreachable(): string | null {
    return this.failing ? (this.problem ?? 'unreachable') : null;
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.doorbell?.stop();
    this.doorbell = null;
  }

  private poll(): void {
    if (this.looking !== null) {
      this.again = true;
      return;
    }
    this.looking = this.lookOnce().finally(() => {
      this.looking = null;
      if (this.again) {
        this.again = false;
        this.poll();
      }
    });
  }

  private async lookOnce(): Promise<void> {
    try {
      await this.look();
      if (this.failing) this.log('upstream head: answering again');
      this.failing = false;
      this.problem = null;
    } catch (e) {
      this.problem = (e as Error).message;
      if (!this.failing)
        this.log(`upstream head: cannot be read (logged once until it can): ${describeForLog(e)}`, 'warn');
      this.failing = true;
    }
  }

  private async look(): Promise<UpstreamHead> {
    const { client, capabilities } = this.store;
    const [latest, finalized] = await client.batch([
      { method: 'eth_getBlockByNumber', params: ['latest', true] },
      ...(capabilities.finalizedTag
        ? [{ method: 'eth_getBlockByNumber', params: ['finalized', false] }]
        : []),
    ]);
    if (!latest?.ok || latest.result === null || typeof latest.result !== 'object')
      throw new Unavailable(
        `the upstream's latest block cannot be read: ${latest?.ok ? 'none' : latest?.error.message}`,
      );
    const head = await this.store.acceptBlock(latest.result as Record<string, unknown>);
    const depth = BigInt(this.options.finalityDepth);
    let final = head.number > depth ? head.number - depth : 0n;
    const tagged = finalized?.ok ? (finalized.result as { number?: unknown } | null) : null;
    if (capabilities.finalizedTag) {
      // The upstream's own finality, when it has one; a tag ahead of the head is no answer.
      const number = tagged && typeof tagged.number === 'string' ? BigInt(tagged.number) : -1n;
      if (number < 0n || number > head.number)
        throw new Unavailable(
          `the upstream's finalized block ${number} is not at or behind its head ${head.number}`,
        );
      final = number;
    }
    const next: UpstreamHead = { number: head.number, hash: head.hash, finalized: final };
    if (
      this.last === null ||
      this.last.number !== next.number ||
      this.last.finalized !== next.finalized ||
      toHex(this.last.hash) !== toHex(next.hash)
    ) {
      const record = {
        number: quantityToHex(next.number),
        hash: toHex(next.hash),
        finalized: quantityToHex(final),
      };
      await this.store.putMeta(HEAD_META, new TextEncoder().encode(JSON.stringify(record)));
      this.last = next;
    }
    return next;
  }
}

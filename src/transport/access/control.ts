import type { LogLine } from '../../core/log.ts';
import type { CallGate, CallInfo, Refusal } from '../../rpc/envelope.ts';
import { LIMIT_EXCEEDED } from '../../rpc/errors.ts';
import { subscriptionEventOf } from '../../rpc/subscriptionEvents.ts';
import type { KeyEntry, KeyRing } from '../apiKeys.ts';
import type { RequestInfo, SocketPolicy } from '../server.ts';
import { creditsOf, EVENT_CREDITS, PENDING_CHARGE_MS } from './credits.ts';
import { type Decision, type Ledger, MemoryLedger } from './ledger.ts';
import { refusingList } from './settings.ts';
import { UsageBook, UsageLog, type UsageStatus } from './usage.ts';

/** Where a refusal's `data.see` points: this repository's documentation of keys. */
export const DOCS_RATE = 'docs/keys.md#rate-limits';
export const DOCS_DAY = 'docs/keys.md#daily-quota';

/** Infura's code and words for a request its key's allow-lists refuse (HTTP 403). */
export const REJECTED_BY_SETTINGS = -32002;
export const CLOSE_REASON_DAY = 'daily request count exceeded';

const ALLOWLIST_REFUSAL: Refusal = {
  httpStatus: 403,
  error: { code: REJECTED_BY_SETTINGS, message: 'rejected due to project ID settings' },
};

export interface AccessOptions {
  keys: KeyRing;
  /** The rate and day state (ledger.ts); a MemoryLedger unless several processes share limits. */
  ledger?: Ledger;
  /** This process's usage, in memory (the dashboard reads it). */
  book?: UsageBook;
  /** Its copy in the datadir, for `ethtrace keys usage`; closed with the access control. */
  usageLog?: UsageLog | null;
  now?: () => number;
  /** Hears credits spent and calls refused, by key name (the metrics, src/observe/metrics.ts). */
  observer?: KeyObserver;
}

/** Per-key-name counts for metrics: names only, never a key. */
export interface KeyObserver {
  keyCredits(name: string, credits: number): void;
  keyRefused(name: string, kind: 'rate' | 'day' | 'allowlist', calls: number): void;
}

/** Per WebSocket: what its subscriptions were last charged for (Infura charges per block, per second). */
interface SubscriptionCharge {
  /** `logs`: the block whose logs were charged. */
  block: string;
  /** `newPendingTransactions`: when it was charged. */
  at: number;
}

/**
 * The access policy of keys with settings: allow-lists, credits per second and per day, usage. It
 * gives the envelope a gate per body (src/rpc/envelope.ts CallGate) and the transport its word on
 * open WebSockets (SocketPolicy in src/transport/server.ts). Keys and secrets are checked before,
 * at the door (KeyRing.check in server.ts), so a gate is only ever made for a key that passed.
 */
export class AccessControl implements SocketPolicy {
  readonly keys: KeyRing;
  readonly ledger: Ledger;
  readonly book: UsageBook;
  private readonly usageLog: UsageLog | null;
  private readonly now: () => number;
  private readonly observer: KeyObserver | null;
  private readonly charges = new WeakMap<RequestInfo, Map<string, SubscriptionCharge>>();

  constructor(options: AccessOptions) {
    this.keys = options.keys;
    this.now = options.now ?? Date.now;
    this.ledger = options.ledger ?? new MemoryLedger(this.now);
    this.book = options.book ?? new UsageBook(this.now);
    this.usageLog = options.usageLog ?? null;
    this.observer = options.observer ?? null;
  }

  /** The gate of one body; null without a key (`--no-auth`). */
  gateFor(request: RequestInfo): CallGate | null {
    const entry = this.entryOf(request);
    if (!entry) return null;
    const origin = header(request.headers.origin);
    const userAgent = header(request.headers['user-agent']);
    return {
      admit: (calls) => {
        // The entry as of now: `keys update` applies to the next body, even on an open WebSocket
        // (an HTTP body's gate is made for it alone, with the entry of now).
        const current = request.transport === 'http' ? entry : (this.entryOf(request) ?? entry);
        if (refusingList(current.settings?.allow, { origin, userAgent }, calls) !== null) {
          this.recordAll(current, calls, 'refused-allowlist');
          return ALLOWLIST_REFUSAL;
        }
        let credits = 0;
        for (const call of calls) credits += creditsOf(call.method);
        const decision = this.ledger.take(current.id, credits, current.limits);
        return decision instanceof Promise
          ? decision.then((d) => this.decided(current, calls, d, credits))
          : this.decided(current, calls, decision, credits);
      },
      answered: (call, code) => {
        this.book.record(
          entry.id,
          entry.name,
          call.method,
          code === null ? 'ok' : (String(code) as UsageStatus),
          creditsOf(call.method),
        );
      },
    };
  }

  /** SocketPolicy: sockets of a key that has spent its day close (asked once a second). */
  closeReason(key: string): string | null {
    const entry = this.keys.lookup(key);
    return entry && this.ledger.exhausted(entry.id, entry.limits) ? CLOSE_REASON_DAY : null;
  }

  /**
   * SocketPolicy: each notification is counted, and charged as Infura charges events (credits.ts
   * EVENT_CREDITS); one that finds its key's day spent closes the socket instead of being sent.
   */
  notifying(request: RequestInfo, subscription: string, resultJson: string): string | null {
    const entry = this.entryOf(request);
    if (!entry) return null;
    if (this.ledger.exhausted(entry.id, entry.limits)) return CLOSE_REASON_DAY;
    const event = subscriptionEventOf(resultJson);
    let credits = 0;
    if (event.kind === 'newHeads') credits = EVENT_CREDITS.newHeads;
    else {
      let subs = this.charges.get(request);
      if (!subs) {
        subs = new Map();
        this.charges.set(request, subs);
      }
      let last = subs.get(subscription);
      if (!last) {
        last = { block: '', at: Number.NEGATIVE_INFINITY };
        subs.set(subscription, last);
      }
      if (event.kind === 'logs') {
        if (last.block !== event.block) {
          last.block = event.block;
          credits = EVENT_CREDITS.logs;
        }
      } else {
        const now = this.now();
        if (now - last.at >= PENDING_CHARGE_MS) {
          last.at = now;
          credits = EVENT_CREDITS.newPendingTransactions;
        }
      }
    }
    if (credits > 0) {
      this.ledger.charge(entry.id, credits, entry.limits);
      this.observer?.keyCredits(entry.name, credits);
    }
    this.book.record(entry.id, entry.name, `eth_subscription:${event.kind}`, 'ok', credits);
    return null;
  }

  async close(): Promise<void> {
    await this.ledger.close();
    this.usageLog?.close();
  }

  private entryOf(request: RequestInfo): KeyEntry | null {
    return request.key === null ? null : this.keys.lookup(request.key);
  }

  private decided(
    entry: KeyEntry,
    calls: readonly CallInfo[],
    decision: Decision,
    credits: number,
  ): Refusal | null {
    if (decision.ok) {
      this.observer?.keyCredits(entry.name, credits);
      return null;
    }
    if (decision.reason === 'day') {
      this.recordAll(entry, calls, 'refused-day');
      return {
        httpStatus: 429,
        error: {
          code: LIMIT_EXCEEDED,
          message: 'daily request count exceeded, request rate limited',
          data: {
            see: DOCS_DAY,
            credits_used: decision.used,
            credits_allowed: decision.allowed,
            reset_at: new Date(decision.resetAt).toISOString(),
          },
        },
        // No Retry-After: clients that honour it (viem) would wait until midnight UTC.
      };
    }
    this.recordAll(entry, calls, 'refused-rate');
    const backoff = decision.retryAfterMs / 1000;
    return {
      httpStatus: 429,
      error: {
        code: LIMIT_EXCEEDED,
        message: 'project ID request rate exceeded',
        data: {
          see: DOCS_RATE,
          current_rps: round2(decision.currentRps),
          allowed_rps: decision.allowedRps,
          backoff_seconds: round2(backoff),
        },
      },
      // Whole seconds, as HTTP has it; at least one.
      headers: { 'retry-after': String(Math.max(1, Math.ceil(backoff))) },
    };
  }

  /** Refused calls are counted, with no credits: a refusal is not charged. */
  private recordAll(entry: KeyEntry, calls: readonly CallInfo[], status: UsageStatus): void {
    for (const call of calls) this.book.record(entry.id, entry.name, call.method, status, 0);
    const kind = status === 'refused-day' ? 'day' : status === 'refused-rate' ? 'rate' : 'allowlist';
    this.observer?.keyRefused(entry.name, kind, calls.length);
  }
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function round2(n: number): number {
  return Math.ceil(n * 100) / 100;
}

/** The access control of a server over `datadir`: usage in memory and in the datadir's usage files. */
export function openAccessControl(
  keys: KeyRing,
  datadir: string,
  log: LogLine,
  observer?: KeyObserver,
  /** Shared by several processes (ledger.ts LeasingLedger); this process's alone by default. */
  ledger?: Ledger,
  /** The served method table's names: usage counts other names as `other` (usage.ts). */
  methods?: Iterable<string>,
): AccessControl {
  const book = new UsageBook(Date.now, methods);
  return new AccessControl({
    keys,
    book,
    usageLog: new UsageLog(datadir, book, Date.now, log),
    ...(observer ? { observer } : {}),
    ...(ledger ? { ledger } : {}),
  });
}

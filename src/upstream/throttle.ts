/**
 * The waits of the upstream client: a concurrency cap, a start-rate cap and a plain sleep. Each
 * wait can be ended early by `close(reason)`, which rejects it with that reason and clears its
 * timer, so a closed client leaves nothing behind that keeps the process alive. A wait for a slot or
 * a token also ends when its signal aborts (the request's budget for upstream reads ran out).
 */

interface Waiter {
  resolve: () => void;
  reject: (reason: unknown) => void;
}

/**
 * A place in `queue`, left (rejected with the signal's reason) if `signal` aborts before it is
 * served; a waiter that left is never served, so it holds no slot and takes no token.
 */
function queueUntilAborted(queue: Waiter[], signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      const index = queue.indexOf(waiter);
      if (index !== -1) queue.splice(index, 1);
      reject(signal?.reason);
    };
    const waiter: Waiter = {
      resolve: () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      reject: (reason) => {
        signal?.removeEventListener('abort', onAbort);
        reject(reason);
      },
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    queue.push(waiter);
  });
}

/** At most `max` holders at once; the others wait in arrival order. */
export class Semaphore {
  private active = 0;
  private readonly queue: Waiter[] = [];
  private closedWith: unknown;
  private closed = false;

  constructor(private readonly max: number) {}

  acquire(signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(this.closedWith);
    if (this.active < this.max) {
      this.active++;
      return Promise.resolve();
    }
    return queueUntilAborted(this.queue, signal);
  }

  release(): void {
    const next = this.queue.shift();
    // The slot passes straight to the next waiter, so `active` stays as it is.
    if (next !== undefined) next.resolve();
    else this.active--;
  }

  close(reason: unknown): void {
    this.closed = true;
    this.closedWith = reason;
    for (const waiter of this.queue.splice(0)) waiter.reject(reason);
  }
}

/**
 * A token bucket: `rate` starts a second on average, with a burst of `burst` after a quiet spell.
 * Waiters are served in arrival order by one timer.
 */
export class TokenBucket {
  private tokens: number;
  private last = performance.now();
  private readonly queue: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  private closedWith: unknown;
  private closed = false;

  constructor(
    private readonly rate: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  take(signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(this.closedWith);
    this.refill();
    if (this.queue.length === 0 && this.tokens >= 1) {
      this.tokens -= 1;
      return Promise.resolve();
    }
    const wait = queueUntilAborted(this.queue, signal);
    this.schedule();
    return wait;
  }

  close(reason: unknown): void {
    this.closed = true;
    this.closedWith = reason;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    for (const waiter of this.queue.splice(0)) waiter.reject(reason);
  }

  private refill(): void {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
  }

  private schedule(): void {
    if (this.timer !== undefined || this.queue.length === 0) return;
    const ms = Math.max(1, Math.ceil(((1 - this.tokens) / this.rate) * 1000));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.refill();
      while (this.tokens >= 1) {
        const next = this.queue.shift();
        if (next === undefined) break;
        this.tokens -= 1;
        next.resolve();
      }
      this.schedule();
    }, ms);
  }
}

/** Sleeps that `close(reason)` ends at once (rejected with the reason, timers cleared). */
export class Sleeper {
  private readonly sleeping = new Map<NodeJS.Timeout, Waiter>();
  private closedWith: unknown;
  private closed = false;

  sleep(ms: number): Promise<void> {
    if (this.closed) return Promise.reject(this.closedWith);
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.sleeping.delete(timer);
        resolve();
      }, ms);
      this.sleeping.set(timer, { resolve, reject });
    });
  }

  close(reason: unknown): void {
    this.closed = true;
    this.closedWith = reason;
    for (const [timer, waiter] of this.sleeping) {
      clearTimeout(timer);
      waiter.reject(reason);
    }
    this.sleeping.clear();
  }
}

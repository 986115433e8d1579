import WebSocket from 'ws';
import { caught } from '../core/caught.ts';
import type { LogLine } from '../core/log.ts';
import { redactUrl } from './client.ts';
import { describeNetworkError } from './transports.ts';

/** Reconnection backoff after the subscription's socket closes: first wait, and the cap. */
const RECONNECT_FIRST_MS = 1_000;
const RECONNECT_MAX_MS = 30_000;

/**
 * An `eth_subscribe("newHeads")` on the upstream's WebSocket, used only as a doorbell: each
 * notification calls `ring`, and the head tracker then reads and checks the head as it does when
 * polling (a notification's header is not trusted or used). It reconnects with backoff when the
 * socket closes, and says so once per outage.
 */
export class NewHeadsDoorbell {
  private socket: WebSocket | null = null;
  private timer: NodeJS.Timeout | null = null;
  private waitMs = RECONNECT_FIRST_MS;
  private stopped = false;
  private subscribed = false;
  /** Whether an outage was logged since the last live subscription. */
  private warned = false;

  constructor(
    private readonly url: string,
    private readonly ring: () => void,
    private readonly log: LogLine,
  ) {}

  start(): void {
    this.open();
  }

  /** Whether a subscription is live now. */
  get live(): boolean {
    return this.subscribed;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.socket?.terminate();
    this.socket = null;
  }

  private open(): void {
    if (this.stopped) return;
    const socket = new WebSocket(this.url, { perMessageDeflate: false, handshakeTimeout: 10_000 });
    this.socket = socket;
    socket.on('open', () => {
      socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }));
    });
    socket.on('message', (data) => {
      let message: { id?: unknown; result?: unknown; error?: { message?: unknown }; method?: unknown };
      try {
        message = JSON.parse(data.toString());
      } catch (e) {
        // Only a doorbell: a message that is not JSON rings nothing, and polling still follows the head.
        caught(
          'upstream-newheads-message',
          `upstream head: a message on the newHeads subscription of ${redactUrl(this.url)} is not JSON (${(e as Error).message}): ${data.toString().slice(0, 80)}`,
        );
        return;
      }
      if (message.id === 1) {
        if (typeof message.result === 'string') {
          this.subscribed = true;
          this.warned = false;
          this.waitMs = RECONNECT_FIRST_MS;
          this.log(`upstream head: newHeads subscription on ${redactUrl(this.url)}`);
        } else {
          // A node without subscriptions: polling alone follows its head.
          this.log(
            `upstream head: ${redactUrl(this.url)} refused newHeads (${String(message.error?.message)}); polling only`,
            'warn',
          );
          this.stopped = true;
          socket.close();
        }
      } else if (message.method === 'eth_subscription') this.ring();
    });
    let failure = '';
    socket.on('error', (e) => {
      failure = describeNetworkError(e);
    });
    socket.on('close', (_code, reason) => {
      const was = this.subscribed;
      this.subscribed = false;
      if (this.stopped) return;
      if (was || !this.warned) {
        this.warned = true;
        this.log(
          `upstream head: no newHeads subscription on ${redactUrl(this.url)} (${failure || reason.toString() || 'closed'}); polling until it is back`,
          'warn',
        );
      }
      this.timer = setTimeout(() => this.open(), this.waitMs);
      this.timer.unref();
      this.waitMs = Math.min(this.waitMs * 2, RECONNECT_MAX_MS);
    });
  }
}

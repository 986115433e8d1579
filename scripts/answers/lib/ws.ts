import WebSocket from 'ws';

/**
 * A WebSocket client for one request at a time: the next frame that is not a subscription
 * notification is the answer to the message just sent. Notifications are kept, in arrival order.
 */
export class WsClient {
  readonly notifications: string[] = [];
  private readonly answers: string[] = [];
  private waiter: ((text: string) => void) | undefined;
  private closed: string | undefined;

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      const text = isBinary ? `<binary frame> ${data.toString()}` : data.toString();
      if (text.startsWith('{"jsonrpc":"2.0","method":"eth_subscription"')) {
        this.notifications.push(text);
        return;
      }
      const w = this.waiter;
      if (w) {
        this.waiter = undefined;
        w(text);
      } else this.answers.push(text);
    });
    ws.on('close', (code) => {
      this.closed = `<socket closed ${code}>`;
      this.waiter?.(this.closed);
    });
    ws.on('error', () => {});
  }

  static async open(url: string): Promise<WsClient> {
    const ws = new WebSocket(url);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    return new WsClient(ws);
  }

  /** Sends `text` and answers the next non-notification frame (or why none came). */
  request(text: string, timeoutMs: number): Promise<string> {
    if (this.closed !== undefined) return Promise.resolve(this.closed);
    this.ws.send(text);
    const queued = this.answers.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve(`<no answer within ${timeoutMs} ms>`);
      }, timeoutMs);
      this.waiter = (t) => {
        clearTimeout(timer);
        resolve(t);
      };
    });
  }

  close(): void {
    this.ws.close();
  }
}

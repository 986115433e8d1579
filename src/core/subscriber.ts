/** Where a subscription's notifications go: one WebSocket connection. */
export interface Subscriber {
  /**
   * Sends one `eth_subscription` notification whose result is already JSON text (serialized once
   * for every subscriber); dropped once the connection is closing.
   */
  notify(subscription: string, resultJson: string): void;
  /** Runs `fn` once the connection is gone, so its subscriptions end with it. */
  onClose(fn: () => void): void;
}

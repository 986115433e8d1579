import { InvalidArgument } from '../../../core/errors.ts';
import type { SubscriptionKind } from '../../../services/subscriptions.ts';
import { METHOD_NOT_FOUND, RpcError } from '../../errors.ts';
import { argument, optional, ParamProblem, required } from '../../params.ts';
import { method } from '../define.ts';
import { logFilter } from '../eth/getLogs.ts';

function subscriptionName(value: unknown): string {
  if (typeof value !== 'string') throw new ParamProblem('subscription name must be a string');
  return value;
}

function subscriptionId(value: unknown): string {
  if (typeof value !== 'string') throw new ParamProblem('subscription id must be a string');
  return value;
}

/**
 * eth_subscribe over WebSocket (geth's kinds and errors). A `logs` filter selects by `address` and
 * `topics`; its block range, if any, is ignored, since only new blocks are sent.
 */
export const eth_subscribe = method(
  [required(subscriptionName), optional((v) => v)],
  ([name, options], { services, subscriber }) => {
    if (subscriber === null) throw new RpcError(METHOD_NOT_FOUND, 'notifications not supported');
    let what: SubscriptionKind;
    switch (name) {
      case 'newHeads':
        what = { kind: 'newHeads' };
        break;
      case 'logs':
        // The second argument's meaning depends on the first, so it is parsed here rather than by
        // the parameter table: its problems still answer -32602 naming it, as geth's do.
        what = { kind: 'logs', criteria: argument(1, () => logFilter(options ?? {})).criteria };
        break;
      case 'newPendingTransactions':
        if (options !== undefined && typeof options !== 'boolean') {
          throw new InvalidArgument(
            'invalid argument 1: newPendingTransactions takes true for full transactions',
          );
        }
        what = { kind: 'newPendingTransactions', full: options === true };
        break;
      default:
        throw new RpcError(METHOD_NOT_FOUND, `no "${name}" subscription in eth namespace`);
    }
    return services.subscriptions.subscribe(subscriber, what);
  },
);

export const eth_unsubscribe = method([required(subscriptionId)], ([id], { services, subscriber }) => {
  if (subscriber === null) throw new RpcError(METHOD_NOT_FOUND, 'notifications not supported');
  return services.subscriptions.unsubscribe(subscriber, id);
});

import type { Caller } from '../core/caller.ts';
import type { Subscriber } from '../core/subscriber.ts';
import type { Param, ParamValues } from './params.ts';
import { parseParams } from './params.ts';

/** What a method handler may use: the services, never the transport. */
export interface MethodContext<S> {
  services: S;
  /** The WebSocket connection the request came on, for eth_subscribe; null over HTTP. */
  subscriber: Subscriber | null;
  /** Who sent it (key and connection), for bounds kept per client; null when the transport says not. */
  caller: Caller | null;
}

export interface Method<S> {
  run(params: unknown, ctx: MethodContext<S>): Promise<unknown>;
}

/** A method: its parameter parsers and a handler that receives the parsed values, typed. */
export function method<S, const P extends readonly Param<unknown>[]>(
  params: P,
  handler: (args: ParamValues<P>, ctx: MethodContext<S>) => unknown | Promise<unknown>,
): Method<S> {
  return {
    run: async (raw, ctx) => handler(parseParams(params, raw), ctx),
  };
}

export type MethodTable<S> = Readonly<Record<string, Method<S>>>;

import type { MethodContext } from '../method.ts';
import { method as defineMethod } from '../method.ts';
import type { Param, ParamValues } from '../params.ts';
import type { Services } from '../services.ts';

/** `method` bound to this service's Services, so handlers get typed `ctx.services`. */
export function method<const P extends readonly Param<unknown>[]>(
  params: P,
  handler: (args: ParamValues<P>, ctx: MethodContext<Services>) => unknown | Promise<unknown>,
) {
  return defineMethod<Services, P>(params, handler);
}

import { CallTracer } from './callTracer.ts';
import { PrestateTracer } from './prestateTracer.ts';
import { StructLogger } from './structLogger.ts';
import type { GethTracer, GethTracerConfig, TxContext } from './types.ts';

export type { GethTracer, GethTracerConfig, TxContext } from './types.ts';

/** The tracer a debug_trace* request names, for one transaction. */
export function createGethTracer(config: GethTracerConfig, tx: TxContext): GethTracer {
  switch (config.tracer) {
    case 'structLogger':
      return new StructLogger(config.options);
    case 'callTracer':
      return new CallTracer(tx, config);
    case 'prestateTracer':
      return new PrestateTracer(tx, config);
    case 'noopTracer':
      return {
        attach() {},
        detach() {},
        frameStart() {},
        frameEnd() {},
        result: async () => ({}),
      };
  }
}

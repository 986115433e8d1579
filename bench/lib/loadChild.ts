import { type LoadOptions, runLoad } from './load.ts';

/**
 * Entry of the load generator's own process (see runLoadInChild): one run per message, the result
 * or the error sent back. Its heap holds nothing but the run, so no garbage from building chains
 * makes the generator's collections, and with them the measured latencies, longer.
 */
process.on('message', (opts: LoadOptions) => {
  runLoad(opts).then(
    (result) => process.send?.({ result }),
    (e: unknown) => process.send?.({ error: (e as Error)?.stack ?? String(e) }),
  );
});

import type { Method, MethodTable } from '../method.ts';
import type { Services } from '../services.ts';

/**
 * In upstream mode, the methods the upstream node answers itself: what writes (a transaction is the
 * upstream's to send), what reads across many blocks it indexes and this service would have to fetch
 * block by block (logs, fee history and the price oracles), its proofs (its state trie is not kept
 * here), and its pool. Everything else is answered here, from checked and cached data.
 */
export const PASS_THROUGH = [
  'eth_sendRawTransaction',
  'eth_getLogs',
  'eth_feeHistory',
  'eth_gasPrice',
  'eth_maxPriorityFeePerGas',
  'eth_blobBaseFee',
  'eth_getProof',
  'txpool_status',
  'txpool_content',
  'txpool_contentFrom',
] as const;

/** The method table with the PASS_THROUGH methods sent on to the upstream, params as given. */
export function withPassThrough(methods: MethodTable<Services>): MethodTable<Services> {
  const forwarded = Object.fromEntries(
    PASS_THROUGH.map((name): [string, Method<Services>] => [
      name,
      {
        run: async (params, { services }) => {
          if (!services.forward) throw new Error(`${name} is passed through only in upstream mode`);
          return services.forward(name, params ?? []);
        },
      },
    ]),
  );
  return { ...methods, ...forwarded };
}

import { StoreInconsistentError } from '../store/errors.ts';
import type { ChainStore } from '../store/types.ts';

/**
 * What an ethereumjs VM asks of its blockchain: BLOCKHASH before EIP-2935 serves it from state, and
 * only ever for canonical blocks already stored (the 256 before the one running). A hash the store
 * lacks means a damaged store; answering zero would make the EVM compute a wrong result, so it fails.
 */
export function canonicalBlockHashes(store: ChainStore) {
  const source = {
    async getBlock(number: number) {
      const hash = await store.getCanonicalHash(BigInt(number));
      if (hash === null)
        throw new StoreInconsistentError(`BLOCKHASH: canonical block ${number} is missing from the store`);
      return { hash: () => hash };
    },
    async putBlock() {},
    shallowCopy: () => source,
  };
  return source;
}

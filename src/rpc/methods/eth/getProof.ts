import { bytesToBigInt } from '@ethereumjs/util';
import { InvalidArgument } from '../../../core/errors.ts';
import { quantityToHex, toHex } from '../../../primitives/hex.ts';
import { address, blockSelector, LATEST, optional, ParamProblem, required } from '../../params.ts';
import { method } from '../define.ts';
import { goJsonType, type StorageKey, storageKey } from './getStorageAt.ts';

// geth's cap: each key is a trie walk of a dozen node reads, and a proof answer grows by a few KB per key.
const MAX_PROOF_KEYS = 1024;

// geth reports an absent account with zero hashes (its state has no object to take them from), not the
// empty-code hash and empty-trie root; clients comparing answers with geth's expect the same.
const ZERO_HASH = `0x${'00'.repeat(32)}`;

function storageKeys(value: unknown): StorageKey[] {
  if (!Array.isArray(value)) {
    throw new ParamProblem(`json: cannot unmarshal ${goJsonType(value)} into Go value of type []string`);
  }
  if (value.length > MAX_PROOF_KEYS) {
    throw new InvalidArgument(`too many storage keys requested (max ${MAX_PROOF_KEYS}, got ${value.length})`);
  }
  return value.map(storageKey);
}

/** EIP-1186 account and storage proofs, in geth's answer shape, at any block of the chain. */
export const eth_getProof = method(
  [required(address), required(storageKeys), optional(blockSelector)],
  async ([who, keys, block], { services }) => {
    const ref = await services.chain.stateBlock(block ?? LATEST);
    const { account, proof, storage } = await services.state.proof(
      who,
      keys.map((k) => k.slot),
      ref,
    );
    return {
      address: toHex(who),
      accountProof: proof.map(toHex),
      balance: quantityToHex(account?.balance ?? 0n),
      codeHash: account ? toHex(account.codeHash) : ZERO_HASH,
      nonce: quantityToHex(account?.nonce ?? 0n),
      storageHash: account ? toHex(account.storageRoot) : ZERO_HASH,
      storageProof: storage.map((s, i) => ({
        // A 32-byte key comes back as sent; shorter ones as a quantity (`0x00` → `0x0`), as geth does.
        key: keys[i]?.inputLength === 32 ? toHex(s.slot) : quantityToHex(bytesToBigInt(s.slot)),
        value: quantityToHex(s.value),
        proof: s.proof.map(toHex),
      })),
    };
  },
);

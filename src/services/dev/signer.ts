import type { Common } from '@ethereumjs/common';
import { createTx, type TypedTransaction } from '@ethereumjs/tx';
import secp256k1 from 'secp256k1';
import type { DevAccount } from '../../chain/devChain.ts';
import type { CallRequest } from '../../core/call.ts';
import { RequestFailed } from '../../core/errors.ts';
import { toHex } from '../../primitives/hex.ts';
import { keccak256 } from '../../primitives/keccak.ts';
import { firstLine } from './admission.ts';

/** The dev accounts' keys: what eth_sendTransaction, personal_sign and eth_signTypedData_v4 sign with. */
export class DevSigner {
  constructor(readonly accounts: readonly DevAccount[]) {}

  /** The dev account that signs for `from`; an error naming it when there is none. */
  signer(from: Uint8Array | undefined): DevAccount {
    if (!from) throw new RequestFailed('unknown account (no from): only the dev accounts can sign');
    return this.account(from);
  }

  /** A call with its fees and gas filled in, signed by the dev account it is from. */
  signTransaction(call: CallRequest & { gas: bigint }, nonce: bigint, common: Common): TypedTransaction {
    const account = this.signer(call.from);
    const fees =
      call.gasPrice !== undefined
        ? { gasPrice: call.gasPrice, type: 0 }
        : { maxPriorityFeePerGas: call.maxPriorityFeePerGas, maxFeePerGas: call.maxFeePerGas, type: 2 };
    try {
      return createTx(
        {
          nonce,
          gasLimit: call.gas,
          ...(call.to ? { to: call.to } : {}),
          value: call.value ?? 0n,
          data: call.data ?? new Uint8Array(),
          chainId: common.chainId(),
          ...fees,
        },
        { common },
      ).sign(account.privateKey);
    } catch (e) {
      throw new RequestFailed(`invalid transaction: ${firstLine((e as Error).message)}`);
    }
  }

  /** personal_sign / eth_sign: EIP-191 signature of `message` by a dev account, as r ‖ s ‖ v. */
  signMessage(address: Uint8Array, message: Uint8Array): Uint8Array {
    const prefix = new TextEncoder().encode(`\x19Ethereum Signed Message:\n${message.length}`);
    return this.signDigest(address, keccak256(Buffer.concat([prefix, message])));
  }

  /** eth_signTypedData_v4: the signature of an EIP-712 digest (see typedDataDigest) by a dev account. */
  signTypedData(address: Uint8Array, digest: Uint8Array): Uint8Array {
    return this.signDigest(address, digest);
  }

  private signDigest(address: Uint8Array, digest: Uint8Array): Uint8Array {
    const { signature, recid } = secp256k1.ecdsaSign(digest, this.account(address).privateKey);
    return Buffer.concat([signature, Uint8Array.of(27 + recid)]);
  }

  private account(address: Uint8Array): DevAccount {
    const account = this.accounts.find(
      (a) => Buffer.compare(Buffer.from(a.address), Buffer.from(address)) === 0,
    );
    if (!account)
      throw new RequestFailed(`unknown account ${toHex(address)}: only the dev accounts can sign`);
    return account;
  }
}

import { createTx, createTxFromRLP, paramsTx, type TypedTransaction } from '@ethereumjs/tx';
import { Address } from '@ethereumjs/util';
import type { CallRequest } from '../exec/callRequest.ts';
import type { DevAccount } from '../ingest/devChain.ts';
import type { Importer } from '../ingest/importer.ts';
import { toHex } from '../primitives/hex.ts';
import { RpcError, ServerError } from '../rpc/errors.ts';

/** Infura's code for a transaction the node refuses (funds, fees). */
const TRANSACTION_REJECTED = -32003;
// Tip a dev transaction pays when it names none: small, and above zero so that tools that check
// the priority fee are happy.
const DEFAULT_TIP = 1_000_000_000n;

/**
 * The dev chain's writer side: transactions are checked as a node checks them, then each is mined
 * into its own block through the importer, so dev blocks are executed and stored exactly like
 * imported ones. Sends are serialised: one block at a time.
 */
export class DevService {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly importer: Importer,
    readonly accounts: readonly DevAccount[],
  ) {}

  async sendRawTransaction(raw: Uint8Array): Promise<Uint8Array> {
    return this.serially(async () => {
      const common = this.nextBlockCommon();
      let tx: TypedTransaction;
      try {
        tx = createTxFromRLP(raw, { common });
      } catch (e) {
        throw new ServerError(`invalid transaction: ${firstLine((e as Error).message)}`);
      }
      return this.mine(tx);
    });
  }

  /** Signs a call with the dev account it is from and mines it. */
  async sendTransaction(call: CallRequest): Promise<Uint8Array> {
    return this.serially(async () => {
      const from = call.from;
      const account =
        from && this.accounts.find((a) => Buffer.compare(Buffer.from(a.address), Buffer.from(from)) === 0);
      if (!account)
        throw new ServerError(
          `unknown account ${from ? toHex(from) : '(no from)'}: only the dev accounts can sign`,
        );
      const state = this.importer.headState;
      const sender = await state.getAccount(new Address(account.address));
      const header = this.importer.headHeader;
      const baseFee = header?.baseFeePerGas !== undefined ? header.calcNextBaseFee() : undefined;
      const common = this.nextBlockCommon();
      const fees =
        call.gasPrice !== undefined || baseFee === undefined
          ? { gasPrice: call.gasPrice ?? 1_000_000_000n, type: 0 }
          : {
              maxPriorityFeePerGas: call.maxPriorityFeePerGas ?? DEFAULT_TIP,
              maxFeePerGas: call.maxFeePerGas ?? baseFee * 2n + (call.maxPriorityFeePerGas ?? DEFAULT_TIP),
              type: 2,
            };
      // With no gas named, as much as one transaction may use: the block's limit, or EIP-7825's cap.
      const blockLimit = header?.gasLimit ?? 30_000_000n;
      const txCap = common.isActivatedEIP(7825)
        ? BigInt(paramsTx[7825]?.maxTransactionGasLimit ?? blockLimit)
        : blockLimit;
      let tx: TypedTransaction;
      try {
        tx = createTx(
          {
            nonce: call.nonce ?? sender?.nonce ?? 0n,
            gasLimit: call.gas ?? (txCap < blockLimit ? txCap : blockLimit),
            ...(call.to ? { to: call.to } : {}),
            value: call.value ?? 0n,
            data: call.data ?? new Uint8Array(),
            chainId: common.chainId(),
            ...fees,
          },
          { common },
        ).sign(account.privateKey);
      } catch (e) {
        throw new ServerError(`invalid transaction: ${firstLine((e as Error).message)}`);
      }
      return this.mine(tx);
    });
  }

  private async mine(tx: TypedTransaction): Promise<Uint8Array> {
    await this.check(tx);
    await this.importer.mine([tx], BigInt(Math.floor(Date.now() / 1000)));
    return tx.hash();
  }

  /** The checks a node makes before accepting a transaction, each with a message that says what to fix. */
  private async check(tx: TypedTransaction): Promise<void> {
    const common = this.nextBlockCommon();
    if (tx.supports(155) || tx.type > 0) {
      const chainId = 'chainId' in tx ? (tx.chainId as bigint) : common.chainId();
      if (chainId !== common.chainId()) {
        throw new ServerError(
          `invalid chain id: transaction has ${chainId}, this chain is ${common.chainId()}`,
        );
      }
    }
    let sender: Address;
    try {
      sender = tx.getSenderAddress();
    } catch (e) {
      throw new ServerError(`invalid sender: ${firstLine((e as Error).message)}`);
    }
    const account = await this.importer.headState.getAccount(sender);
    const nonce = account?.nonce ?? 0n;
    if (tx.nonce < nonce) throw new ServerError(`nonce too low: next nonce ${nonce}, tx nonce ${tx.nonce}`);
    if (tx.nonce > nonce) {
      throw new ServerError(
        `nonce too high: next nonce ${nonce}, tx nonce ${tx.nonce} (transactions are mined as they arrive)`,
      );
    }
    const header = this.importer.headHeader;
    if (header && tx.gasLimit > header.gasLimit) {
      throw new ServerError(
        `exceeds block gas limit: gas ${tx.gasLimit}, block gas limit ${header.gasLimit}`,
      );
    }
    const intrinsic = tx.getIntrinsicGas();
    if (tx.gasLimit < intrinsic)
      throw new ServerError(`intrinsic gas too low: gas ${tx.gasLimit}, minimum needed ${intrinsic}`);
    const baseFee = header?.baseFeePerGas !== undefined ? header.calcNextBaseFee() : 0n;
    const feeCap = 'maxFeePerGas' in tx ? tx.maxFeePerGas : tx.gasPrice;
    if (feeCap < baseFee) {
      throw new ServerError(
        `max fee per gas less than block base fee: maxFeePerGas ${feeCap}, baseFee ${baseFee}`,
      );
    }
    const cost = tx.gasLimit * feeCap + tx.value;
    const balance = account?.balance ?? 0n;
    if (balance < cost) {
      throw new RpcError(
        TRANSACTION_REJECTED,
        `insufficient funds for gas * price + value: balance ${balance}, tx cost ${cost}`,
      );
    }
  }

  /** The Common of the next block's fork (mining sets it; checks want the same rules). */
  private nextBlockCommon() {
    const common = this.importer.chainCommon;
    const header = this.importer.headHeader;
    if (header) {
      common.setHardforkBy({
        blockNumber: header.number + 1n,
        timestamp: BigInt(Math.floor(Date.now() / 1000)),
      });
    }
    return common;
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => {});
    return next;
  }
}

function firstLine(message: string): string {
  return message.split('\n')[0] ?? message;
}

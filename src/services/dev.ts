import { createTx, createTxFromRLP, paramsTx, type TypedTransaction } from '@ethereumjs/tx';
import { Account, Address } from '@ethereumjs/util';
import secp256k1 from 'secp256k1';
import { keccak256 } from '../chain/crypto.ts';
import type { CallRequest } from '../exec/callRequest.ts';
import type { DevAccount } from '../ingest/devChain.ts';
import type { Importer } from '../ingest/importer.ts';
import { type TypedData, typedDataDigest } from '../primitives/eip712.ts';
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

  /** Seconds added to the clock by evm_increaseTime; the next block's timestamp if one was set. */
  private timeOffset = 0n;
  private nextTimestamp: bigint | null = null;

  private async mine(tx: TypedTransaction): Promise<Uint8Array> {
    await this.check(tx);
    await this.mineBlock([tx]);
    return tx.hash();
  }

  private async mineBlock(txs: TypedTransaction[]): Promise<void> {
    const timestamp = this.nextTimestamp ?? BigInt(Math.floor(Date.now() / 1000)) + this.timeOffset;
    this.nextTimestamp = null;
    await this.importer.mine(txs, timestamp);
  }

  /** evm_mine: `blocks` empty blocks. */
  async mineEmpty(blocks: number): Promise<void> {
    await this.serially(async () => {
      for (let i = 0; i < blocks; i++) await this.mineBlock([]);
    });
  }

  /** evm_increaseTime: moves the clock of later blocks forward; answers the total offset. */
  increaseTime(seconds: bigint): bigint {
    this.timeOffset += seconds;
    return this.timeOffset;
  }

  /** evm_setNextBlockTimestamp: the next block's timestamp (it must be after the head's). */
  setNextBlockTimestamp(timestamp: bigint): void {
    const head = this.importer.headHeader;
    if (head && timestamp <= head.timestamp) {
      throw new ServerError(`timestamp ${timestamp} is not after the head block's ${head.timestamp}`);
    }
    this.nextTimestamp = timestamp;
  }

  /**
   * anvil_/hardhat_ setBalance, setNonce, setCode, setStorageAt. The change is written into a new
   * (empty) block, so that it is part of the chain's history like every other change: reads at
   * `latest` see it at once, and older blocks keep their state. (anvil changes state without a block.)
   */
  async setAccount(
    address: Uint8Array,
    change: { balance?: bigint; nonce?: bigint; code?: Uint8Array; slot?: [Uint8Array, Uint8Array] },
  ): Promise<void> {
    await this.serially(async () => {
      const state = this.importer.headState;
      const at = new Address(address);
      const account = (await state.getAccount(at)) ?? new Account();
      if (change.balance !== undefined) account.balance = change.balance;
      if (change.nonce !== undefined) account.nonce = change.nonce;
      await state.putAccount(at, account);
      if (change.code !== undefined) await state.putCode(at, change.code);
      if (change.slot) await state.putStorage(at, change.slot[0], change.slot[1]);
      await this.mineBlock([]);
    });
  }

  /** personal_sign / eth_sign: EIP-191 signature of `message` by a dev account, as r ‖ s ‖ v. */
  signMessage(address: Uint8Array, message: Uint8Array): Uint8Array {
    const prefix = new TextEncoder().encode(`\x19Ethereum Signed Message:\n${message.length}`);
    return this.signDigest(address, keccak256(Buffer.concat([prefix, message])));
  }

  /** eth_signTypedData_v4: the EIP-712 signature by a dev account. */
  signTypedData(address: Uint8Array, data: TypedData): Uint8Array {
    let digest: Uint8Array;
    try {
      digest = typedDataDigest(data);
    } catch (e) {
      throw new ServerError(`invalid typed data: ${(e as Error).message}`);
    }
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
    if (!account) throw new ServerError(`unknown account ${toHex(address)}: only the dev accounts can sign`);
    return account;
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

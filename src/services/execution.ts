import type { BlockHeader } from '@ethereumjs/block';
import type { ChainReader } from '../chain/reader.ts';
import { decodeSignedTransaction } from '../chain/signedTransaction.ts';
import type { BlockSelector } from '../core/blockSelector.ts';
import type {
  BlockOverrides,
  CallBundle,
  CallRequest,
  SimulateRequest,
  StateOverrides,
} from '../core/call.ts';
import { InvalidArgument, RequestFailed, refusedBy, SimulationRejected } from '../core/errors.ts';
import { RawJson } from '../core/rawJson.ts';
import { type AccessListResult, type CallBundlesJob, planBlocks, type SignedBundleJob } from '../exec/api.ts';
import type { ExecutionClient } from '../exec/client.ts';
import { quantityToHex } from '../primitives/hex.ts';
import { type BundleContext, bundlesAt } from './debug.ts';
import type { FeeService } from './fees.ts';

/** A call object as eth_call & co. take it: the call plus the fields that only check it. */
export interface CallArguments {
  call: CallRequest;
  /** geth rejects a call whose chainId is not the node's. */
  chainId?: bigint;
}

type Overrides = { stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides };

/**
 * eth_call, eth_estimateGas and eth_createAccessList with geth's semantics, on the same executor as
 * trace_call. Where geth and trace_call (Reth) differ, these follow geth: the sender pays for gas at
 * the price it names (and must afford gas × fee cap + value), a reverted call is an error with code 3.
 * The block and the cheap checks are done here; the EVM work goes to the execution layer.
 */
export class ExecutionService {
  constructor(
    private readonly chain: ChainReader,
    private readonly fees: FeeService,
    private readonly exec: ExecutionClient,
  ) {}

  /** The call's output; a revert throws Reverted, any other failure RequestFailed. */
  async call(block: BlockSelector, args: CallArguments, overrides: Overrides = {}): Promise<Uint8Array> {
    const blockHash = await this.blockHash(block);
    this.checkChainId(args);
    return this.exec.run('call', { blockHash, call: args.call, overrides });
  }

  /**
   * eth_simulateV1's blocks on the state after `block`, as JSON bytes. Their numbers and times are
   * checked here first, so a request past `maxBlocks` is refused (and counted) before any EVM work.
   */
  async simulate(block: BlockSelector, request: SimulateRequest, maxBlocks: number): Promise<RawJson> {
    const blockHash = await this.blockHash(block);
    const header = await this.chain.header(blockHash);
    if (!header) throw new Error('block is indexed but its header is missing');
    try {
      planBlocks(header, request.blocks, maxBlocks);
    } catch (e) {
      if (e instanceof SimulationRejected && e.fault === 'client limit')
        throw refusedBy('simulate_blocks', e);
      throw e;
    }
    return new RawJson(await this.exec.run('simulate', { blockHash, ...request }));
  }

  /** The lowest gas limit at which the call succeeds (geth's search: src/exec/calls/estimateGas.ts). */
  async estimateGas(block: BlockSelector, args: CallArguments, overrides: Overrides = {}): Promise<bigint> {
    const blockHash = await this.blockHash(block);
    this.checkChainId(args);
    return this.exec.run('estimateGas', { blockHash, call: args.call, overrides });
  }

  /**
   * geth's eth_createAccessList, made for the transaction the wallet will send: the fees are geth's
   * transaction defaults (see transactionDefaults), so the sender must afford them.
   */
  async createAccessList(
    block: BlockSelector,
    args: CallArguments,
    overrides: { stateOverrides?: StateOverrides } = {},
  ): Promise<AccessListResult> {
    const blockHash = await this.blockHash(block);
    const header = await this.chain.header(blockHash);
    if (!header) throw new Error('block is indexed but its header is missing');
    const call = await this.transactionDefaults(args.call, header);
    this.checkChainId(args);
    return this.exec.run('createAccessList', { blockHash, call, overrides });
  }

  /**
   * Erigon's eth_callMany: the bundles' calls run in order with eth_call's semantics on the state
   * after the block's first `transactionIndex` transactions, each bundle a block and a second later
   * than the one before (Erigon). `timeoutMs` may shorten the server's deadline, never lengthen it.
   */
  async callMany(
    bundles: CallBundle[],
    context: BundleContext,
    stateOverrides: StateOverrides | undefined,
    timeoutMs: number | undefined,
  ): Promise<RawJson> {
    const job: CallBundlesJob = {
      ...(await bundlesAt(this.chain, context)),
      bundles,
      bundleSeconds: 1n,
      ...(stateOverrides ? { stateOverrides } : {}),
    };
    return new RawJson(await this.exec.run('callBundles', job, this.deadline(timeoutMs)));
  }

  /**
   * eth_callBundle (Flashbots' relay, Reth): signed transactions on the state after `stateBlock`, in
   * the environment of the block after it unless the request names its own: its number, 12 seconds
   * later (Reth), the state block's coinbase and gas limit, and the base fee that block would have
   * (as Flashbots' relay computes it; Reth keeps the state block's).
   */
  async callBundle(
    stateBlock: BlockSelector,
    bundle: {
      txs: Uint8Array[];
      blockNumber: bigint;
      timestamp?: bigint;
      coinbase?: Uint8Array;
      gasLimit?: bigint;
      difficulty?: bigint;
      baseFee?: bigint;
    },
    timeoutMs: number | undefined,
  ): Promise<RawJson> {
    const blockHash = await this.blockHash(stateBlock);
    const header = await this.chain.header(blockHash);
    if (!header) throw new Error('block is indexed but its header is missing');
    const baseFee = bundle.baseFee ?? this.fees.nextBaseFee(header) ?? undefined;
    // Decoded here too: a malformed one is a bad parameter at once, and what each calls is read ahead.
    const common = this.chain.commonAt(header.number, header.timestamp);
    const calls = bundle.txs.map((raw, i): CallRequest => {
      try {
        const tx = decodeSignedTransaction(raw, common);
        return {
          from: tx.getSenderAddress().bytes,
          to: tx.to?.bytes ?? null,
          gas: tx.gasLimit,
          value: tx.value,
          data: tx.data,
        };
      } catch (e) {
        throw new InvalidArgument(
          `invalid argument 0: txs[${i}]: invalid transaction: ${(e as Error).message.split('\n')[0]}`,
        );
      }
    });
    const job: SignedBundleJob = {
      blockHash,
      txs: bundle.txs,
      calls,
      blockOverrides: {
        number: bundle.blockNumber,
        time: bundle.timestamp ?? header.timestamp + 12n,
        ...(bundle.coinbase ? { feeRecipient: bundle.coinbase } : {}),
        ...(bundle.gasLimit !== undefined ? { gasLimit: bundle.gasLimit } : {}),
        ...(bundle.difficulty !== undefined ? { difficulty: bundle.difficulty } : {}),
        ...(baseFee !== undefined ? { baseFeePerGas: baseFee } : {}),
      },
    };
    return new RawJson(await this.exec.run('signedBundle', job, this.deadline(timeoutMs)));
  }

  /** A request's own deadline, which may be shorter than the server's, never longer. */
  private deadline(timeoutMs: number | undefined): { deadlineMs?: number } {
    return timeoutMs === undefined
      ? {}
      : { deadlineMs: Math.max(1, Math.min(timeoutMs, this.exec.deadlineMs)) };
  }

  /**
   * geth's defaults for eth_sendTransaction (setDefaults) on the latest block: the fees of
   * transactionDefaults, then, when no gas is named, eth_estimateGas's answer with those fees. An
   * estimate that fails (a revert, too little balance) fails the send with its error, as in geth,
   * rather than mining a transaction bound to fail.
   */
  async sendDefaults(call: CallRequest): Promise<CallRequest & { gas: bigint }> {
    const blockHash = await this.blockHash({ kind: 'tag', tag: 'latest' });
    const header = await this.chain.header(blockHash);
    if (!header) throw new Error('block is indexed but its header is missing');
    const filled = await this.transactionDefaults(call, header);
    const gas =
      filled.gas ?? (await this.exec.run('estimateGas', { blockHash, call: filled, overrides: {} }));
    return { ...filled, gas };
  }

  private async blockHash(block: BlockSelector): Promise<Uint8Array> {
    return (await this.chain.stateBlock(block)).hash;
  }

  private checkChainId(args: CallArguments): void {
    const want = this.chain.chainId;
    if (args.chainId !== undefined && args.chainId !== want)
      throw new RequestFailed(`chainId does not match node's (have=${args.chainId}, want=${want})`);
  }

  /**
   * geth's defaults for a transaction to be sent (setFeeDefaults): the oracle's tip and twice the
   * block's base fee, or the oracle's price before London; twice the blob base fee for blob calls.
   */
  private async transactionDefaults(call: CallRequest, header: BlockHeader): Promise<CallRequest> {
    const out: CallRequest = { ...call };
    delete out.type;
    if (out.maxFeePerBlobGas === 0n)
      throw new RequestFailed('maxFeePerBlobGas, if specified, must be non-zero');
    if (out.blobVersionedHashes && out.maxFeePerBlobGas === undefined && header.excessBlobGas !== undefined)
      out.maxFeePerBlobGas = 2n * header.getBlobGasPrice();
    if (out.gasPrice !== undefined && out.authorizationList !== undefined)
      throw new RequestFailed('both gasPrice and authorizationList specified');
    if (
      out.gasPrice === undefined &&
      out.maxFeePerGas !== undefined &&
      out.maxPriorityFeePerGas !== undefined
    ) {
      if (out.maxFeePerGas === 0n) throw new RequestFailed('maxFeePerGas must be non-zero');
      checkFeeOrder(out.maxFeePerGas, out.maxPriorityFeePerGas);
      return out;
    }
    const london = header.baseFeePerGas !== undefined;
    if (out.gasPrice !== undefined) {
      if (out.gasPrice === 0n && london)
        throw new RequestFailed('gasPrice must be non-zero after london fork');
      return out;
    }
    if (!london) {
      if (out.maxFeePerGas !== undefined || out.maxPriorityFeePerGas !== undefined)
        throw new RequestFailed(
          'maxFeePerGas and maxPriorityFeePerGas are not valid before London is active',
        );
      out.gasPrice = await this.fees.suggestTipCap();
      return out;
    }
    out.maxPriorityFeePerGas ??= await this.fees.suggestTipCap();
    out.maxFeePerGas ??= out.maxPriorityFeePerGas + 2n * (header.baseFeePerGas ?? 0n);
    checkFeeOrder(out.maxFeePerGas, out.maxPriorityFeePerGas);
    return out;
  }
}

function checkFeeOrder(maxFee: bigint, tip: bigint): void {
  if (maxFee < tip) {
    throw new RequestFailed(
      `maxFeePerGas (${quantityToHex(maxFee)}) < maxPriorityFeePerGas (${quantityToHex(tip)})`,
    );
  }
}

import { createTxFromRLP } from '@ethereumjs/tx';
import type { CallRequest } from '../../../core/call.ts';
import { InvalidArgument } from '../../../core/errors.ts';
import { traceTypes } from '../../callObject.ts';
import { blockSelector, data, LATEST, optional, required } from '../../params.ts';
import { method } from '../define.ts';

/** A signed transaction traced as a call from its signer, on top of the block (like trace_call). */
export const trace_rawTransaction = method(
  [required(data), optional(traceTypes), optional(blockSelector)],
  async ([raw, types, block], { services }) => {
    const ref = await services.chain.resolve(block ?? LATEST);
    const header = ref && (await services.chain.header(ref.hash));
    const common = header ? services.chain.commonAt(header.number, header.timestamp) : undefined;
    let call: CallRequest;
    try {
      const tx = createTxFromRLP(raw, common ? { common } : {});
      call = {
        from: tx.getSenderAddress().bytes,
        to: tx.to?.bytes ?? null,
        gas: tx.gasLimit,
        value: tx.value,
        data: tx.data,
        nonce: tx.nonce,
        type: tx.type,
        ...('maxFeePerGas' in tx
          ? { maxFeePerGas: tx.maxFeePerGas, maxPriorityFeePerGas: tx.maxPriorityFeePerGas }
          : { gasPrice: tx.gasPrice }),
        ...('accessList' in tx
          ? { accessList: tx.accessList.map(([address, keys]) => ({ address, storageKeys: keys })) }
          : {}),
      };
    } catch (e) {
      throw new InvalidArgument(
        `invalid argument 0: invalid transaction: ${(e as Error).message.split('\n')[0]}`,
      );
    }
    return services.trace.callMany(
      block ?? LATEST,
      [{ call, types: types ?? { trace: false, stateDiff: false, vmTrace: false } }],
      { single: true },
    );
  },
);

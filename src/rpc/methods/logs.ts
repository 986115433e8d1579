import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';
import { eth_baseFee } from './eth/baseFee.ts';
import { eth_blobBaseFee } from './eth/blobBaseFee.ts';
import { eth_feeHistory } from './eth/feeHistory.ts';
import { eth_gasPrice } from './eth/gasPrice.ts';
import { eth_getLogs } from './eth/getLogs.ts';
import { eth_maxPriorityFeePerGas } from './eth/maxPriorityFeePerGas.ts';

export const LOGS_METHODS: MethodTable<Services> = {
  eth_baseFee,
  eth_blobBaseFee,
  eth_feeHistory,
  eth_gasPrice,
  eth_getLogs,
  eth_maxPriorityFeePerGas,
};

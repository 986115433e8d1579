import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';
import { eth_getBalance } from './eth/getBalance.ts';
import { eth_getCode } from './eth/getCode.ts';
import { eth_getProof } from './eth/getProof.ts';
import { eth_getStorageAt } from './eth/getStorageAt.ts';
import { eth_getStorageValues } from './eth/getStorageValues.ts';
import { eth_getTransactionCount } from './eth/getTransactionCount.ts';

export const STATE_METHODS: MethodTable<Services> = {
  eth_getBalance,
  eth_getCode,
  eth_getProof,
  eth_getStorageAt,
  eth_getStorageValues,
  eth_getTransactionCount,
};

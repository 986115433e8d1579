import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';
import { debug_getRawBlock } from './debug/getRawBlock.ts';
import { debug_getRawHeader } from './debug/getRawHeader.ts';
import { debug_getRawReceipts } from './debug/getRawReceipts.ts';
import { debug_getRawTransaction } from './debug/getRawTransaction.ts';
import { eth_getBlockByHash } from './eth/getBlockByHash.ts';
import { eth_getBlockByNumber } from './eth/getBlockByNumber.ts';
import { eth_getBlockTransactionCountByHash } from './eth/getBlockTransactionCountByHash.ts';
import { eth_getBlockTransactionCountByNumber } from './eth/getBlockTransactionCountByNumber.ts';
import { eth_getRawTransactionByHash } from './eth/getRawTransactionByHash.ts';
import { eth_getTransactionByBlockHashAndIndex } from './eth/getTransactionByBlockHashAndIndex.ts';
import { eth_getTransactionByBlockNumberAndIndex } from './eth/getTransactionByBlockNumberAndIndex.ts';
import { eth_getTransactionByHash } from './eth/getTransactionByHash.ts';
import { eth_getTransactionReceipt } from './eth/getTransactionReceipt.ts';
import {
  eth_getUncleByBlockHashAndIndex,
  eth_getUncleByBlockNumberAndIndex,
  eth_getUncleCountByBlockHash,
  eth_getUncleCountByBlockNumber,
} from './eth/uncles.ts';

/** Blocks and transactions as stored: headers, bodies, receipts, and their raw encodings. */
export const BLOCKS_METHODS: MethodTable<Services> = {
  eth_getBlockByNumber,
  eth_getBlockByHash,
  eth_getBlockTransactionCountByNumber,
  eth_getBlockTransactionCountByHash,
  eth_getTransactionByHash,
  eth_getTransactionByBlockNumberAndIndex,
  eth_getTransactionByBlockHashAndIndex,
  eth_getTransactionReceipt,
  eth_getRawTransactionByHash,
  eth_getUncleCountByBlockHash,
  eth_getUncleCountByBlockNumber,
  eth_getUncleByBlockHashAndIndex,
  eth_getUncleByBlockNumberAndIndex,
  debug_getRawHeader,
  debug_getRawBlock,
  debug_getRawReceipts,
  debug_getRawTransaction,
};

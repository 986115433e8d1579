import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';
import { trace_block } from './trace/block.ts';
import { trace_filter } from './trace/filter.ts';
import { trace_get } from './trace/get.ts';
import { trace_replayBlockTransactions } from './trace/replayBlockTransactions.ts';
import { trace_replayTransaction } from './trace/replayTransaction.ts';
import { trace_transaction } from './trace/transaction.ts';

export const TRACE_REPLAY_METHODS: MethodTable<Services> = {
  trace_replayTransaction,
  trace_replayBlockTransactions,
  trace_transaction,
  trace_block,
  trace_get,
  trace_filter,
};

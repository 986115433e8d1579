import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';
import { trace_call } from './trace/call.ts';
import { trace_callMany } from './trace/callMany.ts';
import { trace_rawTransaction } from './trace/rawTransaction.ts';

export const TRACE_METHODS: MethodTable<Services> = {
  trace_call,
  trace_callMany,
  trace_rawTransaction,
};

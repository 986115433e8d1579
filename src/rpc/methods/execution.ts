import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';
import { eth_call } from './eth/call.ts';
import { eth_callBundle } from './eth/callBundle.ts';
import { eth_callMany } from './eth/callMany.ts';
import { eth_createAccessList } from './eth/createAccessList.ts';
import { eth_estimateGas } from './eth/estimateGas.ts';
import { eth_simulateV1 } from './eth/simulateV1.ts';

/** Calls simulated with geth's semantics (services/execution.ts). */
export const EXECUTION_METHODS: MethodTable<Services> = {
  eth_call,
  eth_callBundle,
  eth_callMany,
  eth_createAccessList,
  eth_estimateGas,
  eth_simulateV1,
};

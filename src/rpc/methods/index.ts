import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';
import { BLOCKS_METHODS } from './blocks.ts';
import { DEBUG_TRACE_METHODS } from './debugTrace.ts';
import { DEV_METHODS } from './dev.ts';
import { eth_blockNumber } from './eth/blockNumber.ts';
import { eth_chainId } from './eth/chainId.ts';
import { eth_config } from './eth/config.ts';
import { eth_getBlockReceipts } from './eth/getBlockReceipts.ts';
import { eth_syncing } from './eth/syncing.ts';
import { EXECUTION_METHODS } from './execution.ts';
import { FILTER_METHODS } from './filters/index.ts';
import { LOGS_METHODS } from './logs.ts';
import { net_version } from './net/version.ts';
import { withPassThrough } from './passThrough.ts';
import { STATE_METHODS } from './state.ts';
import { TRACE_METHODS } from './trace.ts';
import { TRACE_REPLAY_METHODS } from './traceReplay.ts';
import { web3_clientVersion } from './web3/clientVersion.ts';

/** Every method the service answers, listed explicitly. */
export const METHODS: MethodTable<Services> = {
  ...BLOCKS_METHODS,
  ...STATE_METHODS,
  ...LOGS_METHODS,
  ...TRACE_METHODS,
  ...TRACE_REPLAY_METHODS,
  ...DEBUG_TRACE_METHODS,
  ...DEV_METHODS,
  ...EXECUTION_METHODS,
  ...FILTER_METHODS,
  eth_blockNumber,
  eth_chainId,
  eth_config,
  eth_getBlockReceipts,
  eth_syncing,
  net_version,
  web3_clientVersion,
};

/** The table served: upstream mode adds the methods the upstream answers itself (passThrough.ts). */
export function methodTable(upstream: boolean): MethodTable<Services> {
  return upstream ? withPassThrough(METHODS) : METHODS;
}

import type { MethodTable } from '../../method.ts';
import type { Services } from '../../services.ts';
import {
  eth_getFilterChanges,
  eth_getFilterLogs,
  eth_newBlockFilter,
  eth_newFilter,
  eth_newPendingTransactionFilter,
  eth_uninstallFilter,
} from './filters.ts';
import { eth_subscribe, eth_unsubscribe } from './subscribe.ts';

export const FILTER_METHODS: MethodTable<Services> = {
  eth_subscribe,
  eth_unsubscribe,
  eth_newFilter,
  eth_newBlockFilter,
  eth_newPendingTransactionFilter,
  eth_getFilterChanges,
  eth_getFilterLogs,
  eth_uninstallFilter,
};

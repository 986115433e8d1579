import { ParamProblem, required } from '../../params.ts';
import { method } from '../define.ts';
import { logFilter } from '../eth/getLogs.ts';

function filterId(value: unknown): string {
  if (typeof value !== 'string') throw new ParamProblem('filter id must be a string');
  return value;
}

export const eth_newFilter = method([required(logFilter)], ([filter], { services, caller }) =>
  services.filters.newLogFilter(filter.scope, filter.criteria, caller),
);

export const eth_newBlockFilter = method([], (_args, { services, caller }) =>
  services.filters.newBlockFilter(caller),
);

export const eth_newPendingTransactionFilter = method([], (_args, { services, caller }) =>
  services.filters.newPendingTransactionFilter(caller),
);

export const eth_getFilterChanges = method([required(filterId)], ([id], { services, caller }) =>
  services.filters.changes(id, caller),
);

export const eth_getFilterLogs = method([required(filterId)], ([id], { services, caller }) =>
  services.filters.allLogs(id, caller),
);

export const eth_uninstallFilter = method([required(filterId)], ([id], { services, caller }) =>
  services.filters.uninstall(id, caller),
);

import { ParamProblem, required } from '../../params.ts';
import { method } from '../define.ts';
import { logFilter } from '../eth/getLogs.ts';

function filterId(value: unknown): string {
  if (typeof value !== 'string') throw new ParamProblem('filter id must be a string');
  return value;
}

export const eth_newFilter = method([required(logFilter)], ([filter], { services }) =>
  services.filters.newLogFilter(filter.scope, filter.criteria),
);

export const eth_newBlockFilter = method([], (_args, { services }) => services.filters.newBlockFilter());

export const eth_newPendingTransactionFilter = method([], (_args, { services }) =>
  services.filters.newPendingTransactionFilter(),
);

export const eth_getFilterChanges = method([required(filterId)], ([id], { services }) =>
  services.filters.changes(id),
);

export const eth_getFilterLogs = method([required(filterId)], ([id], { services }) =>
  services.filters.allLogs(id),
);

export const eth_uninstallFilter = method([required(filterId)], ([id], { services }) =>
  services.filters.uninstall(id),
);

import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';
import { eth_accounts } from './dev/accounts.ts';
import { eth_sendRawTransaction } from './dev/sendRawTransaction.ts';
import { eth_sendTransaction } from './dev/sendTransaction.ts';

export const DEV_METHODS: MethodTable<Services> = {
  eth_accounts,
  eth_sendRawTransaction,
  eth_sendTransaction,
};

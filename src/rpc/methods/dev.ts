import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';
import { eth_accounts } from './dev/accounts.ts';
import { anvil_mine, evm_mine } from './dev/mine.ts';
import { eth_sendRawTransaction } from './dev/sendRawTransaction.ts';
import { eth_sendTransaction } from './dev/sendTransaction.ts';
import { anvil_setBalance, anvil_setCode, anvil_setNonce, anvil_setStorageAt } from './dev/setAccount.ts';
import { eth_sign, eth_signTypedData_v4, personal_sign } from './dev/sign.ts';
import { evm_revert, evm_snapshot } from './dev/snapshot.ts';
import { evm_increaseTime, evm_setNextBlockTimestamp } from './dev/time.ts';
import { txpool_content, txpool_contentFrom, txpool_status } from './dev/txpool.ts';

export const DEV_METHODS: MethodTable<Services> = {
  eth_accounts,
  eth_sendRawTransaction,
  eth_sendTransaction,
  eth_sign,
  eth_signTypedData_v4,
  personal_sign,
  txpool_status,
  txpool_content,
  txpool_contentFrom,
  evm_mine,
  anvil_mine,
  hardhat_mine: anvil_mine,
  evm_snapshot,
  anvil_snapshot: evm_snapshot,
  evm_revert,
  anvil_revert: evm_revert,
  evm_increaseTime,
  anvil_increaseTime: evm_increaseTime,
  evm_setNextBlockTimestamp,
  anvil_setNextBlockTimestamp: evm_setNextBlockTimestamp,
  anvil_setBalance,
  hardhat_setBalance: anvil_setBalance,
  anvil_setNonce,
  hardhat_setNonce: anvil_setNonce,
  anvil_setCode,
  hardhat_setCode: anvil_setCode,
  anvil_setStorageAt,
  hardhat_setStorageAt: anvil_setStorageAt,
};

import { parseEther, toHex } from 'viem';
import { mnemonicToAccount, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';

/** The mnemonic every Ethereum dev tool prefunds, so wallets and scripts written for them work here. */
export const DEV_MNEMONIC = 'test test test test test test test test test test test junk';
export const DEV_ACCOUNT_COUNT = 10;
export const DEV_BALANCE_WEI = parseEther('10000');

let accounts: readonly PrivateKeyAccount[] | undefined;

/**
 * Derived once and on first use: ten BIP-32 derivations cost ~0.3 s, too much for every import.
 * Held as private-key accounts because viem's HD accounts may lack `signAuthorization` (EIP-7702).
 */
export function devAccounts(): readonly PrivateKeyAccount[] {
  accounts ??= Array.from({ length: DEV_ACCOUNT_COUNT }, (_, addressIndex) => {
    const privateKey = mnemonicToAccount(DEV_MNEMONIC, { addressIndex }).getHdKey().privateKey;
    if (privateKey === null) throw new Error(`dev account ${addressIndex} has no private key`);
    return privateKeyToAccount(toHex(privateKey));
  });
  return accounts;
}

export function devAccount(index: number): PrivateKeyAccount {
  const account = devAccounts()[index];
  if (account === undefined) throw new RangeError(`dev account ${index} does not exist`);
  return account;
}

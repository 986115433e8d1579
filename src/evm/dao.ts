import type { ForkRules } from './forks.ts';
import { createAddress } from './interpreter.ts';
import type { WorldState } from './state.ts';

/**
 * The DAO fork's irregular state change (EIP-779): at the fork block, before its transactions, the
 * whole balance of each account of the drain list moves to the refund contract. A chain spec asks
 * for it with `daoForkBlock` and `daoForkSupport` (src/chain/genesis.ts makeCommon); the caller
 * decides whether a block is that one.
 *
 * The drain list is the DAO, its child DAOs, and the extraBalance account each of them made: the
 * DAO and every child create that account as the first contract they deploy (nonce 0), and the
 * children are the contracts the DAO's creator contract deployed with its nonces 1 to 57. It is
 * derived here from those three facts rather than listed; test/ingest/evmImport.test.ts compares
 * the state root the change leaves with the one ethereumjs's runBlock leaves, which creates every
 * account of its own list.
 */

/** The DAO (TheDAO's main contract). */
const DAO = 0xbb9bc244d798123fde783fcc1c72d3bb8c189413n;
/** The contract that deployed the child DAOs of splits. */
const DAO_CREATOR = 0x4a574510c7014e4ae985403536074abe582adfc8n;
/** How many child DAOs the drain list holds: the creator's deployments with nonces 1 to 57. */
const CHILD_DAOS = 57n;
/** The WithdrawDAO contract the balances go to. */
export const DAO_REFUND_CONTRACT = 0xbf4ed7b27f1d666546e30d74d50d173d20bca754n;

let drainList: readonly bigint[] | null = null;

/** The accounts the DAO fork drains: each child DAO and its extraBalance, then the DAO's own two. */
export function daoDrainList(): readonly bigint[] {
  if (drainList === null) {
    const list: bigint[] = [];
    for (let nonce = 1n; nonce <= CHILD_DAOS; nonce++) {
      const child = createAddress(DAO_CREATOR, nonce);
      list.push(child, createAddress(child, 0n));
    }
    list.push(DAO, createAddress(DAO, 0n));
    drainList = list;
  }
  return drainList;
}

/**
 * Applies the DAO fork's state change to `world`, as its own step before the block's first
 * transaction: the refund contract made if absent, then each drained account's balance moved to it
 * (each drained account exists afterwards, with a zero balance, as geth's SetBalance leaves it).
 */
export function applyDaoFork(world: WorldState, rules: ForkRules): void {
  const refund = world.account(DAO_REFUND_CONTRACT);
  if (!refund.exists) world.createAccount(refund);
  for (const address of daoDrainList()) {
    const account = world.account(address);
    const balance = account.balance;
    world.addBalance(refund, balance);
    world.setBalance(account, 0n);
  }
  world.endTransaction(rules.emptyIsAbsent);
}

// Run by test/clients/hardhat.test.ts with `hardhat run --no-compile`: reads what the test names
// (ETHTRACE_READ: {accounts, store, slot, call, write}) through a Hardhat fork of ethtrace, sends
// one transaction on the fork, and prints what it saw as one JSON line for the test to check.
import { network } from 'hardhat';

const want = JSON.parse(process.env.ETHTRACE_READ ?? '{}');
const { provider } = await network.create('ethtraceFork');
const request = (method, params = []) => provider.request({ method, params });

// Read at 'latest' (the fork block until the fork mines): Hardhat serves numbered historical blocks
// only on chains it knows the hardfork history of.
const forkBlock = await request('eth_getBlockByNumber', ['latest', false]);
const forkNumber = forkBlock.number;
const accounts = {};
for (const who of want.accounts) {
  accounts[who] = {
    balance: await request('eth_getBalance', [who, 'latest']),
    nonce: await request('eth_getTransactionCount', [who, 'latest']),
    code: await request('eth_getCode', [who, 'latest']),
  };
}
const slot = await request('eth_getStorageAt', [want.store, want.slot, 'latest']);
const call = await request('eth_call', [{ to: want.store, data: want.call }, 'latest']);
const [from] = await request('eth_accounts');
const hash = await request('eth_sendTransaction', [{ from, to: want.store, data: want.write.data }]);
const receipt = await request('eth_getTransactionReceipt', [hash]);
const written = await request('eth_getStorageAt', [want.store, want.write.slot, 'latest']);
console.log(
  JSON.stringify({
    forkNumber,
    forkHash: forkBlock.hash,
    accounts,
    slot,
    call,
    hash,
    status: receipt.status,
    written,
  }),
);

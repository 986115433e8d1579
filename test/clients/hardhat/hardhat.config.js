// The Hardhat project test/clients/hardhat.test.ts runs: one simulated network forking from the
// ethtrace server whose URL the test passes in ETHTRACE_URL.
import { defineConfig } from 'hardhat/config';

export default defineConfig({
  // Hardhat runs blocks of a forked chain only when it knows that chain's forks: the ethtrace dev
  // chain (31337) runs the newest one from genesis.
  chainDescriptors: {
    31337: { name: 'ethtrace dev chain', chainType: 'l1', hardforkHistory: { osaka: { blockNumber: 0 } } },
  },
  networks: {
    ethtraceFork: {
      type: 'edr-simulated',
      chainType: 'l1',
      forking: { url: process.env.ETHTRACE_URL ?? '' },
    },
  },
});

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Anvil, startAnvil } from '../support/anvil.ts';
import { CONFORMANCE } from '../support/cli.ts';
import { startFollowServer } from '../support/follow.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';
import { startUpstreamServer } from '../support/upstream.ts';

/**
 * eth_config (EIP-7910) on the chain sources other than an import: upstream mode (the rules learnt
 * from debug_chainConfig, from anvil_nodeInfo, or known for a public network) and --follow. Each
 * answers from the spec it runs blocks by, so each must give what the chain's own node gives.
 */

const GENESIS = join(CONFORMANCE, 'genesis.json');
const CONFORMANCE_HEAD = 54n;

/** geth's answer on the conformance chain, as the execution-apis fixture records it. */
function fixtureAnswer(): unknown {
  const io = readFileSync(join(CONFORMANCE, 'eth_config', 'get-config.io'), 'utf8');
  const line = io.split('\n').find((l) => l.startsWith('<< '));
  assert.ok(line, 'the fixture has an answer');
  return (JSON.parse(line.slice(3)) as { result: unknown }).result;
}

describe('eth_config over the conformance chain served by another ethtrace', () => {
  let chain: { datadir: string; cleanup: () => void };
  let first: RunningServer;
  before(async () => {
    chain = await importConformanceChain();
    first = await startServer(chain.datadir, { keys: null });
  });
  after(async () => {
    await first?.close();
    chain?.cleanup();
  });

  it('upstream mode (rules from debug_chainConfig) answers as geth did, and a second call costs no round trip', async () => {
    const upstream = await startUpstreamServer([first.url]);
    try {
      assert.deepEqual(await upstream.rpc('eth_config'), fixtureAnswer());
      const before = upstream.roundTrips();
      assert.deepEqual(await upstream.rpc('eth_config'), fixtureAnswer());
      assert.equal(upstream.roundTrips() - before, 0, 'the genesis and head headers are cached');
    } finally {
      await upstream.close();
    }
  });

  it('--follow answers as geth did once in step', async () => {
    const follower = await startFollowServer([first.url], { genesis: GENESIS });
    try {
      await follower.reaches(CONFORMANCE_HEAD);
      assert.deepEqual(await follower.rpc('eth_config'), fixtureAnswer());
    } finally {
      await follower.close();
    }
  });
});

interface ForkConfig {
  activationTime: number;
  forkId: string;
  [field: string]: unknown;
}
interface EthConfig {
  current: ForkConfig | null;
  next: ForkConfig | null;
  last: ForkConfig | null;
}

describe('eth_config in upstream mode over anvil (rules from anvil_nodeInfo)', () => {
  let anvil: Anvil;
  before(async () => {
    anvil = await startAnvil({ hardfork: 'prague' });
  });
  after(async () => {
    await anvil?.stop();
  });

  it("gives anvil's own configuration but the fork id", async () => {
    const upstream = await startUpstreamServer([anvil.url]);
    try {
      const ours = await upstream.rpc<EthConfig>('eth_config');
      const theirs = await anvil.rpc<EthConfig>('eth_config');
      assert.ok(ours.current && theirs.current);
      // anvil answers 0x00000000 for its fork id (test/diff/ethConfig.test.ts); ours is EIP-2124's.
      assert.notEqual(ours.current.forkId, theirs.current.forkId);
      assert.deepEqual(
        { ...ours, current: { ...ours.current, forkId: '' } },
        {
          ...theirs,
          current: { ...theirs.current, forkId: '' },
        },
      );
    } finally {
      await upstream.close();
    }
  });
});

// Mainnet's block 0 as its nodes serve it (eth_getBlockByNumber "0x0"); it hashes to the genesis hash.
const MAINNET_BLOCK_0 = {
  number: '0x0',
  hash: '0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3',
  parentHash: `0x${'0'.repeat(64)}`,
  nonce: '0x0000000000000042',
  sha3Uncles: '0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347',
  logsBloom: `0x${'0'.repeat(512)}`,
  transactionsRoot: '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421',
  stateRoot: '0xd7f8974fb5ac78d9ac099b9ad5018bedc2ce0a72dad1827a1709da30580f0544',
  receiptsRoot: '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421',
  miner: `0x${'0'.repeat(40)}`,
  difficulty: '0x400000000',
  totalDifficulty: '0x400000000',
  extraData: '0x11bbe8db4e347b4e8c937c1c8370e4b5ed33adb3db69cbdb7a38e1e50b1b82fa',
  size: '0x21c',
  gasLimit: '0x1388',
  gasUsed: '0x0',
  timestamp: '0x0',
  mixHash: `0x${'0'.repeat(64)}`,
  transactions: [],
  uncles: [],
};

/**
 * A provider's view of mainnet while its head is block 0: chain id 1, block 0, and no debug or anvil
 * namespace (what a hosted endpoint answers for them). Anything else it refuses as unknown.
 */
function startMainnetGenesisNode(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      const answer = (call: { id: unknown; method: string; params?: unknown[] }) => {
        const result: Record<string, unknown> = {
          eth_chainId: '0x1',
          eth_blockNumber: '0x0',
          net_version: '1',
        };
        if (call.method === 'eth_getBlockByNumber' || call.method === 'eth_getBlockByHash')
          return { jsonrpc: '2.0', id: call.id, result: MAINNET_BLOCK_0 };
        if (call.method in result) return { jsonrpc: '2.0', id: call.id, result: result[call.method] };
        return {
          jsonrpc: '2.0',
          id: call.id,
          error: { code: -32601, message: `the method ${call.method} does not exist/is not available` },
        };
      };
      const parsed = JSON.parse(body) as Parameters<typeof answer>[0] | Array<Parameters<typeof answer>[0]>;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(Array.isArray(parsed) ? parsed.map(answer) : answer(parsed)));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }),
    ),
  );
}

describe('eth_config in upstream mode over a mainnet node that serves no chain config', () => {
  it("takes mainnet's known schedule: at genesis nothing timed is in force, Shanghai is next and BPO2 last", async () => {
    const node = await startMainnetGenesisNode();
    const upstream = await startUpstreamServer([node.url]);
    try {
      const config = await upstream.rpc<EthConfig>('eth_config');
      // The fork ids mainnet's nodes announce once Shanghai and BPO2 are in force (EIP-2124's
      // published table, src/chain/forkId.test.ts), so the spec read is mainnet's whole schedule.
      assert.equal(config.current, null);
      assert.deepEqual(
        [config.next?.activationTime, config.next?.forkId, config.last?.activationTime, config.last?.forkId],
        [1681338455, '0xdce96c2d', 1767747671, '0x07c9462e'],
      );
      assert.deepEqual(config.last?.systemContracts, {
        BEACON_ROOTS_ADDRESS: '0x000f3df6d732807ef1319fb7b8bb8522d0beac02',
        CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS: '0x0000bbddc7ce488642fb579f8b00f3a590007251',
        DEPOSIT_CONTRACT_ADDRESS: '0x00000000219ab540356cbb839cbe05303d7705fa',
        HISTORY_STORAGE_ADDRESS: '0x0000f90827f1c53a10cb7a02335b175320002935',
        WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS: '0x00000961ef480eb55e80d19ad83579a64c007002',
      });
      assert.equal(config.next?.blobSchedule, null, 'Shanghai has no blobs');
    } finally {
      await upstream.close();
      await new Promise((resolve) => node.server.close(resolve));
    }
  });
});

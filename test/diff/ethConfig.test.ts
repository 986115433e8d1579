import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import { parseChainSpec } from '../../src/chain/genesis.ts';
import { ChainWriter } from '../../src/ingest/chainWriter.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { type Anvil, startAnvil } from '../support/anvil.ts';
import { tempDir } from '../support/cli.ts';
import { type CliServer, serveDev, stopDev } from '../support/devServer.ts';
import { ANVIL_CHAIN_ID, ANVIL_HARDFORKS, buildGenesis } from '../support/genesis.ts';
import { rpc } from '../support/rpcClient.ts';
import { startServer } from '../support/server.ts';

/**
 * eth_config (EIP-7910) of ethtrace's dev chain against anvil's on the same fork and chain id: anvil
 * builds its answer from revm's precompile set and its own fork table, ethtrace from src/evm's, so
 * agreement checks the names, addresses, blob parameters and system contracts of each fork.
 */

interface ForkConfig {
  activationTime: number;
  blobSchedule: unknown;
  chainId: string;
  forkId: string;
  precompiles: Record<string, string>;
  systemContracts: Record<string, string>;
}
interface EthConfig {
  current: ForkConfig | null;
  next: ForkConfig | null;
  last: ForkConfig | null;
}

describe('eth_config: the dev chain against anvil', () => {
  for (const hardfork of ANVIL_HARDFORKS) {
    it(`agrees with anvil --hardfork ${hardfork}, the fork id apart`, async () => {
      const dir = tempDir('ethtrace-ethconfig-');
      let anvil: Anvil | undefined;
      let dev: CliServer | undefined;
      try {
        [anvil, dev] = await Promise.all([
          startAnvil({ hardfork }),
          serveDev(dir.path, ['--hardfork', hardfork, '--chain-id', String(ANVIL_CHAIN_ID)]),
        ]);
        const theirs = await anvil.rpc<EthConfig>('eth_config');
        const ours = await rpc<EthConfig>(dev.url, 'eth_config');
        assert.ok(ours.current && theirs.current, 'both serve a current fork');
        // anvil does not compute EIP-2124's id for its chain (it answers 0x00000000); ours is the
        // CRC-32 of the genesis hash alone, as every fork of a dev chain is in force at genesis.
        assert.equal(theirs.current.forkId, '0x00000000');
        const genesis = await rpc<{ hash: string }>(dev.url, 'eth_getBlockByNumber', ['0x0', false]);
        const expected = crc32(Buffer.from(genesis.hash.slice(2), 'hex'))
          .toString(16)
          .padStart(8, '0');
        assert.equal(ours.current.forkId, `0x${expected}`);
        const { forkId: _ourId, ...ourCurrent } = ours.current;
        const { forkId: _theirId, ...theirCurrent } = theirs.current;
        assert.deepEqual(ourCurrent, theirCurrent);
        assert.deepEqual({ next: ours.next, last: ours.last }, { next: theirs.next, last: theirs.last });
      } finally {
        await anvil?.stop();
        if (dev) await stopDev(dev.child);
        dir.cleanup();
      }
    });
  }
});

/** The EIP-2124 checksum of a genesis hash updated with fork points, by node's own CRC-32. */
function forkHash(genesisHash: string, points: readonly bigint[]): string {
  let sum = crc32(Buffer.from(genesisHash.slice(2), 'hex'));
  for (const at of points) {
    const bytes = Buffer.alloc(8);
    bytes.writeBigUInt64BE(at);
    sum = crc32(bytes, sum);
  }
  return `0x${sum.toString(16).padStart(8, '0')}`;
}

function withoutIdAndTime(config: ForkConfig | null): Omit<ForkConfig, 'forkId' | 'activationTime'> {
  assert.ok(config, 'a fork configuration');
  const { forkId: _id, activationTime: _time, ...rest } = config;
  return rest;
}

describe('eth_config: a chain with forks still to come', () => {
  it('reports Prague now, Osaka next and BPO1 last, each fork as anvil runs it', async () => {
    const OSAKA = 2_000_000_000n;
    const BPO1 = 2_100_000_000n;
    const bpo1Blobs = { target: 10, max: 15, baseFeeUpdateFraction: 8346193 };
    const genesis = buildGenesis({ hardfork: 'prague' });
    const config = genesis.config as unknown as Record<string, unknown>;
    config.osakaTime = Number(OSAKA);
    config.bpo1Time = Number(BPO1);
    config.blobSchedule = { ...(config.blobSchedule as object), bpo1: bpo1Blobs };
    const dir = tempDir('ethtrace-ethconfig-import-');
    const store = await openLmdbStore(dir.path);
    try {
      // The genesis block alone, as `ethtrace import` writes it before a chain's first block.
      await (await ChainWriter.open(store, parseChainSpec(genesis))).initGenesis();
    } finally {
      await store.close();
    }
    const server = await startServer(dir.path);
    const anvils: Anvil[] = [];
    try {
      anvils.push(await startAnvil({ hardfork: 'prague' }), await startAnvil({ hardfork: 'osaka' }));
      const [prague, osaka] = await Promise.all(anvils.map((a) => a.rpc<EthConfig>('eth_config')));
      const ours = await server.rpc<EthConfig>('eth_config');
      const block0 = await server.rpc<{ hash: string }>('eth_getBlockByNumber', ['0x0', false]);

      assert.deepEqual(withoutIdAndTime(ours.current), withoutIdAndTime(prague?.current ?? null));
      assert.equal(ours.current?.activationTime, 0);
      assert.equal(ours.current?.forkId, forkHash(block0.hash, []));

      assert.deepEqual(withoutIdAndTime(ours.next), withoutIdAndTime(osaka?.current ?? null));
      assert.equal(ours.next?.activationTime, Number(OSAKA));
      assert.equal(ours.next?.forkId, forkHash(block0.hash, [OSAKA]));

      // BPO1 changes the blob parameters only: Osaka's configuration with the genesis' bpo1 entry.
      assert.deepEqual(withoutIdAndTime(ours.last), {
        ...withoutIdAndTime(ours.next),
        blobSchedule: { baseFeeUpdateFraction: 8346193, max: 15, target: 10 },
      });
      assert.equal(ours.last?.activationTime, Number(BPO1));
      assert.equal(ours.last?.forkId, forkHash(block0.hash, [OSAKA, BPO1]));
    } finally {
      await Promise.all(anvils.map((a) => a.stop()));
      await server.close();
      dir.cleanup();
    }
  });
});

describe('eth_config: a chain before its first timestamp fork', () => {
  it('has no current configuration (as geth: EIP-7910 describes timestamp forks), and Shanghai next', async () => {
    const SHANGHAI = 2_000_000_000n;
    const genesis = buildGenesis({ hardfork: 'cancun' });
    const config = genesis.config as unknown as Record<string, unknown>;
    delete config.cancunTime;
    config.shanghaiTime = Number(SHANGHAI);
    config.blobSchedule = {};
    const dir = tempDir('ethtrace-ethconfig-paris-');
    const store = await openLmdbStore(dir.path);
    try {
      await (await ChainWriter.open(store, parseChainSpec(genesis))).initGenesis();
    } finally {
      await store.close();
    }
    const server = await startServer(dir.path);
    const anvil = await startAnvil({ hardfork: 'cancun' });
    try {
      const ours = await server.rpc<EthConfig>('eth_config');
      const cancun = await anvil.rpc<EthConfig>('eth_config');
      const block0 = await server.rpc<{ hash: string }>('eth_getBlockByNumber', ['0x0', false]);
      assert.equal(ours.current, null);
      assert.ok(ours.next && cancun.current);
      assert.equal(ours.next.activationTime, Number(SHANGHAI));
      assert.equal(ours.next.forkId, forkHash(block0.hash, [SHANGHAI]));
      // Shanghai: Cancun's precompiles but EIP-4844's, no blobs and no system contract yet.
      const { KZG_POINT_EVALUATION: _kzg, ...shanghaiPrecompiles } = cancun.current.precompiles;
      assert.deepEqual(ours.next.precompiles, shanghaiPrecompiles);
      assert.equal(ours.next.blobSchedule, null);
      assert.deepEqual(ours.next.systemContracts, {});
      assert.deepEqual(ours.last, ours.next);
    } finally {
      await anvil.stop();
      await server.close();
      dir.cleanup();
    }
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseChainSpec } from '../../src/chain/genesis.ts';
import { openUpstreamCache } from '../../src/store/lmdb/index.ts';
import type { UpstreamDatadir } from '../../src/store/types.ts';
import type { UpstreamReader } from '../../src/upstream/client.ts';
import { HEAD_META, UpstreamStore } from '../../src/upstream/store.ts';
import { tempDir } from '../support/cli.ts';
import { buildGenesis } from '../support/genesis.ts';

// A final block's canonical hash, once kept in the cache, is read the way an imported chain reads
// it: one lookup, with no read of the head record (issue 19, item 4: that read was most of why
// cached receipts served slower in upstream mode). Blocks past what is final still go by the head.
// The cache is a real LMDB store; the upstream must not be asked for anything here.

const FINAL = 8n;
const HEAD = 72n;
const hashOf = (n: bigint) => new Uint8Array(32).fill(Number(n));

/** Every upstream read fails the test: all answers here come from the cache. */
const noUpstream: UpstreamReader = {
  request: async (method) => assert.fail(`the upstream was asked ${method}`),
  batch: async () => assert.fail('the upstream was asked a batch'),
  stats: () => assert.fail('not used'),
  close: async () => {},
};

describe('upstream mode: canonical hashes of final blocks', () => {
  const dir = tempDir('ethtrace-final-hashes-');
  let cache: UpstreamDatadir;
  let store: UpstreamStore;
  const headReads: string[] = [];

  before(async () => {
    cache = await openUpstreamCache(dir.path);
    for (let n = 0n; n <= FINAL; n++) await cache.cache.putCanonical(n, hashOf(n));
    const head = { number: `0x${HEAD.toString(16)}`, hash: `0x${'48'.repeat(32)}`, finalized: '0x8' };
    await cache.chain.putMeta(HEAD_META, new TextEncoder().encode(JSON.stringify(head)));
    // The datadir's chain store as the store sees it, noting each read of the head record or the head.
    const counted = new Proxy(cache.chain, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (name === 'getHead' || (name === 'getMeta' && args[0] === HEAD_META))
            headReads.push(String(name));
          return value.apply(target, args);
        };
      },
    });
    const spec = parseChainSpec(buildGenesis({}));
    store = new UpstreamStore({ chain: counted, cache: cache.cache }, noUpstream, spec, {
      prestateTracer: false,
      blockReceipts: true,
      finalizedTag: true,
    });
  });
  after(async () => {
    await cache?.chain.close();
    dir.cleanup();
  });

  it('answers a kept final block with one lookup and no read of the head', async () => {
    for (let n = 0n; n <= FINAL; n++) {
      headReads.length = 0;
      assert.deepEqual(Uint8Array.from((await store.getCanonicalHash(n)) ?? []), hashOf(n), `block ${n}`);
      assert.deepEqual(headReads, [], `block ${n}: the head was read`);
    }
  });

  it('still goes by the head for what is not kept: the head itself, and nothing past it', async () => {
    headReads.length = 0;
    assert.deepEqual(Uint8Array.from((await store.getCanonicalHash(HEAD)) ?? []), hashOf(0x48n));
    assert.equal(await store.getCanonicalHash(HEAD + 1n), null);
    assert.ok(headReads.length > 0, 'the head was not read for blocks that are not final');
  });
});

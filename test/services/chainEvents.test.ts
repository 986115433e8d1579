import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { readChainSpec } from '../../src/chain/genesis.ts';
import { ChainReader } from '../../src/chain/reader.ts';
import { readStoredSpec } from '../../src/chain/storedSpec.ts';
import { DEFAULT_LIMITS } from '../../src/config/limits.ts';
import type { Subscriber } from '../../src/core/subscriber.ts';
import { importChain } from '../../src/ingest/importer.ts';
import { readRlpBlocks } from '../../src/ingest/rlpFile.ts';
import { ChainEvents, HEAD_POLL_MS } from '../../src/services/events.ts';
import { LogService } from '../../src/services/logs.ts';
import { SubscriptionService } from '../../src/services/subscriptions.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { CONFORMANCE, tempDir } from '../support/cli.ts';

// Failures in the background work of subscriptions (the head poll, a block's notifications) reach
// no request, so nobody would hear of them but the log: each must leave a line there.

const GENESIS = join(CONFORMANCE, 'genesis.json');
const CHAIN = join(CONFORMANCE, 'chain.rlp');

/** The conformance chain's first `count` blocks as a chain file of their own. */
async function firstBlocks(dir: string, count: number): Promise<string> {
  const parts: Uint8Array[] = [];
  for await (const raw of readRlpBlocks(CHAIN)) {
    if (parts.length === count) break;
    parts.push(raw.rlp);
  }
  const file = join(dir, `first-${count}.rlp`);
  writeFileSync(file, Buffer.concat(parts));
  return file;
}

describe('background failures of chain events and subscriptions are logged', () => {
  const dir = tempDir('ethtrace-events-');
  after(() => dir.cleanup());

  it('logs a failing head poll once while it fails, not every poll', async () => {
    const datadir = join(dir.path, 'poll');
    const store = await openLmdbStore(datadir);
    await importChain({
      store,
      spec: readChainSpec(GENESIS),
      files: [await firstBlocks(dir.path, 3)],
      verifyStateRoot: true,
    });
    const logged: string[] = [];
    const events = new ChainEvents(store, (line) => logged.push(line));
    await events.start();
    try {
      await store.close();
      await sleep(HEAD_POLL_MS * 5);
      const failures = logged.filter((line) => line.startsWith('head poll failed'));
      assert.equal(failures.length, 1, logged.join('\n'));
    } finally {
      events.stop();
    }
  });

  it('logs a subscriber that cannot take a notification, and the others still get every block', async () => {
    const datadir = join(dir.path, 'notify');
    const store = await openLmdbStore(datadir);
    const spec = readChainSpec(GENESIS);
    await importChain({ store, spec, files: [await firstBlocks(dir.path, 10)], verifyStateRoot: true });
    const logged: string[] = [];
    const log = (line: string) => logged.push(line);
    const storedSpec = await readStoredSpec(store);
    assert.ok(storedSpec);
    const chain = new ChainReader(store, storedSpec);
    const events = new ChainEvents(store, log);
    const subscriptions = new SubscriptionService(
      events,
      chain,
      new LogService(chain, DEFAULT_LIMITS.methods),
      DEFAULT_LIMITS.webSocket.maxSubscriptionsPerConnection,
      log,
    );
    const received: string[] = [];
    const broken: Subscriber = {
      notify: () => {
        throw new Error('this subscriber is gone');
      },
      onClose: () => {},
    };
    const working: Subscriber = { notify: (_id, json) => received.push(json), onClose: () => {} };
    await events.start();
    try {
      subscriptions.subscribe(broken, { kind: 'newHeads' });
      subscriptions.subscribe(working, { kind: 'newHeads' });
      const head = await importChain({ store, spec, files: [CHAIN], verifyStateRoot: true });
      const expected = Number(head.head?.number ?? 0n) - 10;
      for (let waited = 0; received.length < expected && waited < 100; waited++) await sleep(HEAD_POLL_MS);
      assert.equal(received.length, expected, 'every new block reached the working subscriber');
      const failures = logged.filter((line) => line.startsWith('notification to subscription'));
      assert.equal(failures.length, expected, logged.join('\n'));
      assert.match(failures[0] ?? '', /this subscriber is gone/);
    } finally {
      events.stop();
      await store.close();
    }
  });
});

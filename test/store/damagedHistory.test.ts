import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { open } from 'lmdb';
import { blockNumberKey } from '../../src/store/lmdb/keys.ts';
import { tempDir } from '../support/cli.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';

/**
 * A store that lost a canonical block's hash (damage no start-up check sees: the head block and its
 * records are intact) must fail the requests that need it, never answer as if the hash were zero.
 * The conformance chain runs BLOCKHASH through the blockchain (not EIP-2935's contract) before
 * Prague, so a call on block 20 asking for block 15's hash reaches the damaged record.
 */

const MISSING = 15n;
const CALL_BLOCK = '0x14';
const PROBE = `0x${'c0de'.padStart(40, '0')}`;
// PUSH1 15 BLOCKHASH PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN: returns the hash of block 15.
const BLOCKHASH_OF_15 = '0x600f4060005260206000f3';
const OVERRIDE = { [PROBE]: { code: BLOCKHASH_OF_15 } };

async function post(url: string, method: string, params: unknown[]) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as { result?: unknown; error?: { code: number; message: string } };
}

describe('a canonical block missing from the store', () => {
  const dir = tempDir('ethtrace-lost-hash-');
  let chain: { datadir: string; cleanup: () => void };
  let intact: RunningServer;
  let damaged: RunningServer;
  const logged: string[] = [];

  before(async () => {
    chain = await importConformanceChain();
    const copy = join(dir.path, 'data');
    cpSync(chain.datadir, copy, { recursive: true });
    // The real LMDB environment, written past the store's interface: the hash of block 15 goes.
    const env = open(copy, { noSubdir: false, compression: false, maxDbs: 32 });
    const canonical = env.openDB<Uint8Array, Uint8Array>('canonical', {
      keyEncoding: 'binary',
      encoding: 'binary',
    });
    assert.ok(canonical.get(blockNumberKey(MISSING)), 'block 15 is canonical before the damage');
    await canonical.remove(blockNumberKey(MISSING));
    await env.close();
    intact = await startServer(chain.datadir);
    damaged = await startServer(copy, { log: (line) => logged.push(line) });
    // Worker starts are not what this is about.
    await intact.app.warm();
    await damaged.app.warm();
  });
  after(async () => {
    await intact?.close();
    await damaged?.close();
    chain?.cleanup();
    dir.cleanup();
  });

  it('is a real block hash on the intact chain', async () => {
    const hash = (await intact.rpc<{ hash: string }>('eth_getBlockByNumber', ['0xf', false])).hash;
    const answer = await post(intact.url, 'eth_call', [{ to: PROBE }, CALL_BLOCK, OVERRIDE]);
    assert.equal(answer.result, hash);
  });

  it('fails eth_call, trace_call and debug_traceCall as an internal error, logged, not a zero hash', async () => {
    const requests: Array<[string, unknown[]]> = [
      ['eth_call', [{ to: PROBE }, CALL_BLOCK, OVERRIDE]],
      ['trace_callMany', [[[{ to: PROBE }, ['trace']]], CALL_BLOCK, { stateOverrides: OVERRIDE }]],
      ['debug_traceCall', [{ to: PROBE }, CALL_BLOCK, { tracer: 'callTracer', stateOverrides: OVERRIDE }]],
    ];
    for (const [method, params] of requests) {
      const answer = await post(damaged.url, method, params);
      assert.deepEqual(answer.error, { code: -32603, message: 'internal error' }, method);
    }
    assert.ok(
      logged.some((line) => line.includes('BLOCKHASH: canonical block 15 is missing from the store')),
      logged.join('\n'),
    );
  });
});

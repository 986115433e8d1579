// eth_call and eth_estimateGas run on the answering thread first (src/exec/inline.ts), stopped by a
// watchdog (src/exec/watchdog.ts) and run again on a worker when they would hold that thread: a
// loop, a costly precompile, a hash of a large memory range. Whichever thread answers, the answer
// must be the one the worker path gives: the same requests run, in this process on the server's
// datadir, as the worker's job (src/exec/jobs/calls.ts callJobs) and as the ethereumjs oracle's
// (test/support/ethereumjsOracle, the path that ran every call on a worker before src/evm), and each
// rendered as the server renders it must be the server's answer.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_LIMITS } from '../../src/config/limits.ts';
import { type CallJob, callJobs } from '../../src/exec/jobs/calls.ts';
import { quantityToHex, toHex } from '../../src/primitives/hex.ts';
import { callObject, stateOverrides } from '../../src/rpc/callObject.ts';
import { toWireError } from '../../src/rpc/errors.ts';
import { tempDir } from '../support/cli.ts';
import { devAccount } from '../support/devAccounts.ts';
import { type CliServer, serveCli, stopDev } from '../support/devServer.ts';
import { type EngineChain, openEngineChain } from '../support/engineDiff.ts';
import { oracleCallJobs } from '../support/ethereumjsOracle/index.ts';

const FIRST = devAccount(0);
const PROBE = '0x00000000000000000000000000000000000c0de1';

/** eth_call of `code` put at PROBE by a state override, with `gas` when given. */
function probeCall(code: string, gas?: bigint): unknown[] {
  return [
    { from: FIRST.address, to: PROBE, ...(gas === undefined ? {} : { gas: `0x${gas.toString(16)}` }) },
    'latest',
    { [PROBE]: { code } },
  ];
}

const LIGHT: Array<[string, string, unknown[]]> = [
  // BALANCE(FIRST), returned as a word.
  ['a balance read', 'eth_call', probeCall(`0x73${FIRST.address.slice(2).toLowerCase()}3160005260206000f3`)],
  ['a revert', 'eth_call', probeCall('0x60006000fd')],
  ['a transfer estimate', 'eth_estimateGas', [{ from: FIRST.address, to: PROBE, value: '0x1' }, 'latest']],
  ['an invalid opcode', 'eth_call', probeCall('0xfe')],
];
const HEAVY: Array<[string, string, unknown[]]> = [
  // JUMPDEST PUSH1 0 JUMP: runs until 30M gas are spent.
  ['an endless loop', 'eth_call', probeCall('0x5b600056', 30_000_000n)],
  // STATICCALL(300000 gas, the pairing precompile, no input) and its word returned.
  ['a costly precompile call', 'eth_call', probeCall('0x60206000600060006008620493e0fa5060206000f3')],
  // KECCAK256 of 32 KiB of memory.
  ['a hash of a large range', 'eth_call', probeCall('0x61800060002060005260206000f3')],
  ['an estimate of the loop', 'eth_estimateGas', probeCall('0x5b600056')],
];

async function raw(url: string, method: string, params: unknown[]): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
  });
  return res.text();
}

async function inlineCounts(url: string): Promise<{ answered: number; interrupted: number }> {
  const text = await (await fetch(`${new URL(url).origin}/metrics`)).text();
  const count = (outcome: string) =>
    Number(
      new RegExp(`ethtrace_inline_calls_total\\{outcome="${outcome}"\\} (\\d+)`).exec(text)?.[1] ?? 'NaN',
    );
  return { answered: count('answered'), interrupted: count('interrupted') };
}

/** The JSON-RPC answer a job's outcome renders to (the result's encoding per method, or the error). */
async function rendered(method: string, run: () => Promise<Uint8Array | bigint>): Promise<unknown> {
  try {
    const value = await run();
    const result = method === 'eth_call' ? toHex(value as Uint8Array) : quantityToHex(value as bigint);
    return { jsonrpc: '2.0', id: 7, result };
  } catch (e) {
    return { jsonrpc: '2.0', id: 7, error: toWireError(e) };
  }
}

describe('eth_call on the answering thread, with a watchdog', () => {
  const dir = tempDir('ethtrace-inline-');
  let server: CliServer;
  let chain: EngineChain;
  before(async () => {
    server = await serveCli(['--no-auth', '--datadir', dir.path]);
    chain = await openEngineChain(dir.path);
  });
  after(async () => {
    await chain?.close();
    if (server) await stopDev(server.child);
    dir.cleanup();
  });

  /** The request as the worker's job and as the oracle's, both on the head, rendered; the server's answer. */
  async function answers(method: string, params: unknown[]) {
    const answer = JSON.parse(await raw(server.url, method, params)) as unknown;
    const head = await chain.store.getHead();
    assert.ok(head);
    const [call, , state] = params;
    const job: CallJob = {
      blockHash: head.hash,
      call: callObject(call),
      overrides: state === undefined ? {} : { stateOverrides: stateOverrides(state) },
    };
    const kind = method === 'eth_call' ? 'call' : 'estimateGas';
    const worker = await rendered(method, () => callJobs(chain.chain, DEFAULT_LIMITS.calls)[kind](job));
    const oracle = await rendered(method, () => oracleCallJobs(chain.chain, DEFAULT_LIMITS.calls)[kind](job));
    return { answer, worker, oracle };
  }

  it('answers light calls on the answering thread as a worker does', async () => {
    const before = await inlineCounts(server.url);
    for (const [name, method, params] of LIGHT) {
      const { answer, worker, oracle } = await answers(method, params);
      assert.deepEqual(answer, worker, name);
      assert.deepEqual(answer, oracle, name);
    }
    const now = await inlineCounts(server.url);
    assert.equal(now.answered - before.answered, LIGHT.length);
    assert.equal(now.interrupted, before.interrupted);
  });

  it('hands a loop, a costly precompile and a large hash to a worker, with the same answers', async () => {
    const before = await inlineCounts(server.url);
    for (const [name, method, params] of HEAVY) {
      const { answer, worker, oracle } = await answers(method, params);
      assert.deepEqual(answer, worker, name);
      assert.deepEqual(answer, oracle, name);
    }
    const now = await inlineCounts(server.url);
    assert.equal(now.interrupted - before.interrupted, HEAVY.length);
    assert.equal(now.answered, before.answered);
  });
});

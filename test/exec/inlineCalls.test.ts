// eth_call and eth_estimateGas run on the answering thread first (src/exec/inline.ts), stopped by a
// watchdog (src/exec/watchdog.ts) and run again on a worker when they would hold that thread: a
// loop, a costly precompile, a hash of a large memory range. Whichever thread answers, the answer
// must be the one the worker path gives: a dev chain on the old path (ETHTRACE_EVM=ethereumjs,
// which runs every call on a worker) answers the same requests, byte for byte.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { tempDir } from '../support/cli.ts';
import { devAccount } from '../support/devAccounts.ts';
import { type CliServer, serveCli, stopDev } from '../support/devServer.ts';

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

describe('eth_call on the answering thread, with a watchdog', () => {
  const dirs = [tempDir('ethtrace-inline-'), tempDir('ethtrace-inline-old-')];
  let inline: CliServer;
  let old: CliServer;
  before(async () => {
    [inline, old] = await Promise.all([
      serveCli(['--no-auth', '--datadir', dirs[0]?.path ?? '']),
      serveCli(['--no-auth', '--datadir', dirs[1]?.path ?? ''], { ETHTRACE_EVM: 'ethereumjs' }),
    ]);
  });
  after(async () => {
    await Promise.all([inline, old].filter(Boolean).map((s) => stopDev(s.child)));
    for (const dir of dirs) dir.cleanup();
  });

  it('answers light calls on the answering thread as a worker does', async () => {
    const before = await inlineCounts(inline.url);
    for (const [name, method, params] of LIGHT) {
      assert.equal(await raw(inline.url, method, params), await raw(old.url, method, params), name);
    }
    const now = await inlineCounts(inline.url);
    assert.equal(now.answered - before.answered, LIGHT.length);
    assert.equal(now.interrupted, before.interrupted);
  });

  it('hands a loop, a costly precompile and a large hash to a worker, with the same answers', async () => {
    const before = await inlineCounts(inline.url);
    for (const [name, method, params] of HEAVY) {
      const answer = await raw(inline.url, method, params);
      assert.equal(answer, await raw(old.url, method, params), name);
    }
    const now = await inlineCounts(inline.url);
    assert.equal(now.interrupted - before.interrupted, HEAVY.length);
    assert.equal(now.answered, before.answered);
  });
});

import type { StateOverrides } from '../core/call.ts';
import { RequestFailed } from '../core/errors.ts';
import type { Precompile } from '../evm/precompiles/index.ts';
import { bytesToBigint } from '../evm/words.ts';
import { toHex } from '../primitives/hex.ts';

/**
 * The precompiles calls see under `overrides`, as geth's state override sets them for every call
 * method (eth_call, eth_simulateV1, the tracers' calls): an override that names a precompile's
 * address takes the precompile away, so the account there is an account like any other, and
 * `movePrecompileToAddress` puts it at another address first. Null when no override names a
 * precompile: the fork's own, as they are. The overrides are taken in address order, so the same
 * request always meets the same refusal (geth's words; its own order is a map's).
 */
export function precompilesUnder(
  overrides: StateOverrides,
  precompiles: ReadonlyMap<number, Precompile>,
): Map<bigint, Precompile> | null {
  const sorted = [...overrides].sort((a, b) =>
    Buffer.compare(Buffer.from(a.address), Buffer.from(b.address)),
  );
  const named = new Set(sorted.map((o) => bytesToBigint(o.address)));
  let active: Map<bigint, Precompile> | null = null;
  const moved = new Set<bigint>();
  for (const { address, override } of sorted) {
    const at = bytesToBigint(address);
    if (moved.has(at))
      throw new RequestFailed(`account ${toHex(address)} has already been overridden by a precompile`);
    const isPrecompile = active ? active.has(at) : at <= 0xffffn && precompiles.has(Number(at));
    if (override.movePrecompileToAddress !== undefined) {
      if (!isPrecompile) throw new RequestFailed(`account ${toHex(address)} is not a precompile`);
      const to = bytesToBigint(override.movePrecompileToAddress);
      if (named.has(to))
        throw new RequestFailed(`account ${toHex(override.movePrecompileToAddress)} is already overridden`);
      active ??= byAddress(precompiles);
      const p = active.get(at);
      if (p) active.set(to, p);
      moved.add(to);
    }
    if (isPrecompile) {
      active ??= byAddress(precompiles);
      active.delete(at);
    }
  }
  return active;
}

function byAddress(precompiles: ReadonlyMap<number, Precompile>): Map<bigint, Precompile> {
  return new Map([...precompiles].map(([n, p]) => [BigInt(n), p]));
}

import type { PoolSnapshot } from './pool.ts';

/** The dev chain as it was when evm_snapshot was called: its head, its pool and its clock. */
export interface DevSnapshot {
  head: bigint;
  pool: PoolSnapshot;
  timeOffset: bigint;
}

/**
 * evm_snapshot ids, counting up from 1 as anvil's and Hardhat's do. Reverting to one uses it up,
 * with every later one (anvil and Hardhat alike).
 */
export class Snapshots {
  private nextId = 1n;
  /** Live snapshots, oldest first. */
  private readonly taken: Array<DevSnapshot & { id: bigint }> = [];

  take(snapshot: DevSnapshot): bigint {
    const id = this.nextId++;
    this.taken.push({ id, ...snapshot });
    return id;
  }

  /** The snapshot `id` names, used up with the later ones; null for an unknown id. */
  takeBack(id: bigint): DevSnapshot | null {
    const at = this.taken.findIndex((s) => s.id === id);
    const found = this.taken[at];
    if (!found) return null;
    this.taken.splice(at);
    return found;
  }
}

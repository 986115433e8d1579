import { type Common, Hardfork } from '@ethereumjs/common';
import type { ChainSpec } from '../chain/genesis.ts';
import { chainForkRules, type ForkRules, forkByName } from '../evm/forks.ts';
import { type Precompile, precompilesFor } from '../evm/precompiles/index.ts';

/** What the EVM of src/evm needs to run a block of one fork of one chain. */
export interface EvmFork {
  readonly rules: ForkRules;
  readonly precompiles: ReadonlyMap<number, Precompile>;
  readonly chainId: bigint;
}

/**
 * A chain's forks as the EVM's rule rows. The fork a block belongs to is still decided by the chain
 * reader's Common (src/chain/forks.ts), which knows geth's genesis format; this maps its hardfork name
 * to the EVM's row and applies the chain's `blobSchedule` (EIP-7840) to it. One row per fork, made
 * once: the rows are shared by every execution of that fork.
 */
export class EvmForks {
  private readonly byHardfork = new Map<string, EvmFork>();
  private readonly schedule: Readonly<Record<string, unknown>>;

  constructor(private readonly spec: ChainSpec) {
    const schedule = (spec.json.config as { blobSchedule?: unknown }).blobSchedule;
    this.schedule =
      typeof schedule === 'object' && schedule !== null ? (schedule as Record<string, unknown>) : {};
  }

  /** The EVM fork for a block whose Common (from `ChainReader.commonAt`) is `common`. */
  of(common: Common): EvmFork {
    const hardfork = common.hardfork();
    let fork = this.byHardfork.get(hardfork);
    if (!fork) {
      fork = this.make(hardfork);
      this.byHardfork.set(hardfork, fork);
    }
    return fork;
  }

  private make(hardfork: string): EvmFork {
    const name = forkByName(hardfork);
    // Every hardfork a chain spec can name has a row (src/evm/forks.ts aliases geth's and
    // ethereumjs's names); one without is a fork this EVM was not built for.
    if (!name) throw new Error(`the EVM has no rules for hardfork ${hardfork}`);
    const rules = chainForkRules(name, this.schedule);
    return { rules, precompiles: precompilesFor(rules.precompiles), chainId: this.spec.chainId };
  }
}

/**
 * Whether block `number` is the chain's DAO fork block, whose irregular state change
 * (src/evm/dao.ts) comes before its transactions. The Common has the fork only for a chain spec
 * with `daoForkSupport` (src/chain/genesis.ts makeCommon).
 */
export function isDaoForkBlock(common: Common, number: bigint): boolean {
  return (
    common.hardforkIsActiveOnBlock(Hardfork.Dao, number) && common.hardforkBlock(Hardfork.Dao) === number
  );
}

import { type Anvil, type AnvilOptions, SLOT_SECONDS, startAnvil } from '../../test/support/anvil.ts';
import { importFromAnvil } from '../../test/support/exportChain.ts';
import { buildBigBlock } from '../../test/support/workload.ts';

export interface BigBlockChainOptions {
  /** How anvil starts (a genesis of the caller's, say); startAnvil's defaults otherwise. */
  anvil?: AnvilOptions;
  /** Empty blocks mined after the busy one, before the chain is imported (to make it final, say). */
  blocksAfter?: number;
}

/**
 * anvil with one block of ~200 transactions and ~440 logs mined, and the same chain imported into a
 * datadir with our CLI (`--no-verify-state-root`: anvil's state roots are not the canonical ones).
 * The caller stops anvil.
 */
export async function bigBlockChain(
  workDir: string,
  log: (line: string) => void,
  opts: BigBlockChainOptions = {},
): Promise<{ anvil: Anvil; number: bigint; datadir: string }> {
  const anvil = await startAnvil(opts.anvil);
  try {
    const big = await buildBigBlock(anvil, { txs: 200, logsPerTx: 2.2 });
    log(`anvil block ${big.number}: ${big.receipts.length} txs`);
    if (opts.blocksAfter) {
      // One slot apart, as mineBlock spaces them, so the chain's timestamps stay reproducible.
      await anvil.rpc('anvil_mine', [`0x${opts.blocksAfter.toString(16)}`, `0x${SLOT_SECONDS.toString(16)}`]);
    }
    const { datadir } = await importFromAnvil(anvil, workDir);
    return { anvil, number: big.number, datadir };
  } catch (e) {
    await anvil.stop();
    throw e;
  }
}

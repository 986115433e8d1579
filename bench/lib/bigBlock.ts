import { type Anvil, startAnvil } from '../../test/support/anvil.ts';
import { importFromAnvil } from '../../test/support/exportChain.ts';
import { buildBigBlock } from '../../test/support/workload.ts';

/**
 * anvil with one block of ~200 transactions and ~440 logs mined, and the same chain imported into a
 * datadir with our CLI (`--no-verify-state-root`: anvil's state roots are not the canonical ones).
 * The caller stops anvil.
 */
export async function bigBlockChain(
  workDir: string,
  log: (line: string) => void,
): Promise<{ anvil: Anvil; number: bigint; datadir: string }> {
  const anvil = await startAnvil();
  try {
    const big = await buildBigBlock(anvil, { txs: 200, logsPerTx: 2.2 });
    log(`anvil block ${big.number}: ${big.receipts.length} txs`);
    const { datadir } = await importFromAnvil(anvil, workDir);
    return { anvil, number: big.number, datadir };
  } catch (e) {
    await anvil.stop();
    throw e;
  }
}

import { join } from 'node:path';
import { startAnvil } from './anvil.ts';
import { type ExportedChain, exportChain } from './exportChain.ts';
import { buildTraceWorkload } from './traceWorkload.ts';
import { buildBasicChain } from './workload.ts';

/**
 * The varied chain: on one anvil, the basic workload (every envelope, transfers to fresh accounts,
 * a contract whose calls log 0–3 times, a revert, an out-of-gas call, an EIP-7702 delegation, a
 * failed creation, an empty block) and then the trace workload (every call kind nested, creations
 * that succeed, revert and collide, every halt, precompiles, SELFDESTRUCT, transient storage,
 * constructors that call and create, delegated EOAs). Exported as genesis.json + chain.rlp.
 */
export async function buildAnvilChain(dir: string): Promise<ExportedChain & { txs: number }> {
  const anvil = await startAnvil();
  try {
    const basic = await buildBasicChain(anvil, { failedCreation: true });
    const trace = await buildTraceWorkload(anvil);
    const txs =
      basic.blocks.reduce((n, b) => n + b.receipts.length, 0) +
      trace.blocks.reduce((n, b) => n + b.txs.length, 0);
    const chain = await exportChain(anvil, join(dir, 'anvil-chain'));
    return { ...chain, txs };
  } finally {
    await anvil.stop();
  }
}

import type { ImportProgress, ImportSummary } from './importer.ts';

type Writer = { write(text: string): unknown; isTTY?: boolean };

const BAR_WIDTH = 24;
// Redrawing more often than this costs more than it tells on a fast import.
const REDRAW_MS = 100;
// Without a terminal, one line per this many blocks (plus the summary) keeps logs readable.
const LOG_EVERY_BLOCKS = 1000;

/** A progress bar on a terminal, plain log lines otherwise. */
export function importProgress(out: Writer): ImportProgress & { finish(summary: ImportSummary): void } {
  const started = performance.now();
  let blocks = 0;
  let txs = 0;
  let gas = 0n;
  let skipped = 0;
  let lastDraw = 0;
  const rate = () => {
    const seconds = (performance.now() - started) / 1000;
    return { seconds, mgas: seconds > 0 ? Number(gas) / 1e6 / seconds : 0 };
  };
  return {
    block({ number, txs: n, gasUsed, fraction }) {
      blocks++;
      txs += n;
      gas += gasUsed;
      const now = performance.now();
      if (out.isTTY) {
        if (now - lastDraw < REDRAW_MS && fraction < 1) return;
        lastDraw = now;
        const { seconds, mgas } = rate();
        const filled = Math.round(fraction * BAR_WIDTH);
        const left = fraction > 0 ? (seconds * (1 - fraction)) / fraction : 0;
        out.write(
          `\r[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] block ${number}  ${blocks} blocks  ${txs} txs  ${mgas.toFixed(1)} Mgas/s  ${formatSeconds(left)} left\x1b[K`,
        );
      } else if (blocks % LOG_EVERY_BLOCKS === 0) {
        const { mgas } = rate();
        out.write(`imported block ${number}: ${blocks} blocks, ${txs} txs, ${mgas.toFixed(1)} Mgas/s\n`);
      }
    },
    skipped() {
      skipped++;
    },
    finish(summary) {
      if (out.isTTY) out.write('\n');
      const mgas = summary.seconds > 0 ? Number(summary.gasUsed) / 1e6 / summary.seconds : 0;
      const head = summary.head ? `head ${summary.head.number}` : 'empty store';
      const skippedNote = skipped > 0 ? ` (${skipped} already stored, skipped)` : '';
      out.write(
        `imported ${summary.imported} blocks${skippedNote}, ${summary.transactions} txs, ${summary.gasUsed} gas in ${summary.seconds.toFixed(2)} s, ${mgas.toFixed(1)} Mgas/s; ${head}\n`,
      );
    },
  };
}

function formatSeconds(s: number): string {
  if (s < 60) return `${Math.ceil(s)}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m${Math.ceil(s % 60)}s` : `${Math.floor(m / 60)}h${m % 60}m`;
}

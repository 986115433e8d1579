/**
 * The per-call cost of the operator dashboard's gate (src/transport/dashboard/source.ts), which runs
 * on every answered call when `--operator-token` is set, next to the usage book's record, which the
 * access control already pays on every call. A micro-benchmark: no server, no I/O.
 *
 *   node --import tsx bench/dashboardGate.ts
 */
import { UsageBook } from '../src/transport/access/usage.ts';
import { DashboardSource } from '../src/transport/dashboard/source.ts';

const CALLS = 2_000_000;
const METHODS = ['eth_call', 'eth_getBlockReceipts', 'eth_chainId', 'trace_callMany', 'eth_getLogs'];
const KEYS = ['k1', 'k2', 'k3', 'k4'];

function nsPerCall(run: (i: number) => void): number {
  for (let i = 0; i < 200_000; i++) run(i); // warm up
  const start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) run(i);
  return Number(process.hrtime.bigint() - start) / CALLS;
}

const book = new UsageBook();
const source = new DashboardSource({
  book,
  keys: null,
  pool: () => ({ busy: 0, queued: 0, size: 2 }),
  head: async () => null,
});
const gates = KEYS.map((k) => source.gateFor(k));
const calls = METHODS.map((method) => ({ method, params: [] }));

const gate = nsPerCall((i) =>
  gates[i % KEYS.length]?.answered?.(
    calls[i % METHODS.length] ?? { method: 'eth_call', params: [] },
    null,
    0.4 + (i % 50),
  ),
);
const gateFor = nsPerCall((i) => source.gateFor(KEYS[i % KEYS.length] ?? null));
const record = nsPerCall((i) =>
  book.record(KEYS[i % KEYS.length] ?? '', 'name', METHODS[i % METHODS.length] ?? '', 'ok', 80),
);
source.close();
console.log(`dashboard gate, answered(): ${gate.toFixed(0)} ns per call`);
console.log(`dashboard gate, gateFor():  ${gateFor.toFixed(0)} ns per body`);
console.log(`usage book, record() (paid already by the access control): ${record.toFixed(0)} ns per call`);

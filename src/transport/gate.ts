import type { CallGate, CallInfo, Refusal } from '../rpc/envelope.ts';

/**
 * Several gates as one: admitted only when every gate admits (the first refusal answers, and the
 * gates after it are not asked), and every gate hears every outcome: the calls of a refused body are
 * told to the other gates as answered with the refusal's code (the refusing gate has counted them
 * itself). Observers (metrics, logs) admit everything, so they go before the access policy and
 * see every call start.
 */
export function combineGates(...gates: ReadonlyArray<CallGate | null | undefined>): CallGate | null {
  const present = gates.filter((g): g is CallGate => g !== null && g !== undefined);
  if (present.length <= 1) return present[0] ?? null;
  return {
    async admit(calls: readonly CallInfo[]): Promise<Refusal | null> {
      for (const gate of present) {
        const refusal = gate.admit ? await gate.admit(calls) : null;
        if (refusal) {
          for (const other of present) {
            if (other === gate) continue;
            for (const call of calls) other.answered?.(call, refusal.error.code, 0);
          }
          return refusal;
        }
      }
      return null;
    },
    answered(call, code, ms) {
      for (const gate of present) gate.answered?.(call, code, ms);
    },
    limited(limit) {
      for (const gate of present) gate.limited?.(limit);
    },
  };
}

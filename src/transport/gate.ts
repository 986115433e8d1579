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
    admit(calls: readonly CallInfo[]): Refusal | null | Promise<Refusal | null> {
      const refused = (gate: CallGate, refusal: Refusal): Refusal => {
        for (const other of present) {
          if (other === gate) continue;
          for (const call of calls) other.answered?.(call, refusal.error.code, 0, true);
        }
        return refusal;
      };
      // Synchronous while the gates are (observers always are, the access policy without Redis):
      // a promise per gate per body showed in the cost of the cheapest calls.
      const from = (start: number): Refusal | null | Promise<Refusal | null> => {
        for (let i = start; i < present.length; i++) {
          const gate = present[i] as CallGate;
          const answer = gate.admit ? gate.admit(calls) : null;
          if (answer instanceof Promise)
            return answer.then((refusal) => (refusal ? refused(gate, refusal) : from(i + 1)));
          if (answer) return refused(gate, answer);
        }
        return null;
      };
      return from(0);
    },
    answered(call, code, ms, refused) {
      for (const gate of present) gate.answered?.(call, code, ms, refused);
    },
    limited(limit) {
      for (const gate of present) gate.limited?.(limit);
    },
  };
}

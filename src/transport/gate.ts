import type { CallGate, CallInfo, Refusal } from '../rpc/envelope.ts';

/**
 * Several gates as one: admitted only when every gate admits (the first refusal answers, and the
 * gates after it are not asked), and every gate hears every outcome. The access policy comes first,
 * so what it refuses costs no other gate anything.
 */
export function combineGates(...gates: ReadonlyArray<CallGate | null | undefined>): CallGate | null {
  const present = gates.filter((g): g is CallGate => g !== null && g !== undefined);
  if (present.length <= 1) return present[0] ?? null;
  const admitting = present.filter((g) => g.admit !== undefined);
  const only = admitting.length === 1 ? admitting[0] : undefined;
  return {
    // Listening gates (the dashboard's, metrics) have no admit: with one gate that decides, its
    // answer is passed on as it comes, without an async step on every body.
    ...(only
      ? { admit: (calls: readonly CallInfo[]) => only.admit?.(calls) ?? null }
      : admitting.length > 1
        ? {
            async admit(calls: readonly CallInfo[]): Promise<Refusal | null> {
              for (const gate of admitting) {
                const refusal = gate.admit ? await gate.admit(calls) : null;
                if (refusal) return refusal;
              }
              return null;
            },
          }
        : {}),
    answered(call, code, ms) {
      for (const gate of present) gate.answered?.(call, code, ms);
    },
  };
}

/** geth's error text for an input the precompile rejects (all the call's gas is then consumed). */
export class PrecompileError {
  constructor(readonly message: string) {}
}

export interface Precompile {
  /** Gas this input costs; may exceed any gas limit (then the call is out of gas); Infinity allowed. */
  gas(input: Uint8Array): number;
  /** The output, or the reason the input is rejected. Never throws for any input. */
  run(input: Uint8Array): Uint8Array | PrecompileError;
}

/** The output of a call that succeeds with nothing to say (a failed signature check, modexp of nothing). */
export const EMPTY: Uint8Array = new Uint8Array(0);

/** A precompile whose price does not depend on its input. */
export function fixedGas(gas: number, run: (input: Uint8Array) => Uint8Array | PrecompileError): Precompile {
  return { gas: () => gas, run };
}

/** Gas of a precompile priced per 32-byte word of input (sha256, ripemd160, identity). */
export function wordGas(base: number, perWord: number): (input: Uint8Array) => number {
  return (input) => base + perWord * Math.ceil(input.length / 32);
}

import { concatHex, type Hex, numberToHex, type TransactionSerializableEIP1559 } from 'viem';

/**
 * Hand-assembled contracts for the workloads. Bytecode rather than Solidity because the project has
 * no compiler, and a few dozen opcodes are easy to check by eye against the assembly beside them.
 */

/**
 * LogStore: a token-like contract whose storage writes and log count are chosen per call, so one
 * contract can drive blocks with any number of logs and one-word storage slots.
 *
 * Call data is three words: `key`, `value`, `logs`.
 * - `value == 0`: REVERT with `key` as the 32-byte revert data (the revert case).
 * - else `storage[key] = value`, then emit `min(logs, 3)` logs, each with data = `value`:
 *   LOG0; LOG1(topic `key`); LOG2(topics `key`, CALLER). Returns `value`.
 *
 * Beside each chunk: its offset, its opcodes and, after the dash, the stack (bottom first) or effect.
 */
export const LOG_STORE_RUNTIME: Hex = `0x${[
  '5f35', // 00: PUSH0 CALLDATALOAD — key
  '602035', // 02: PUSH1 0x20 CALLDATALOAD — key value
  '805f52', // 05: DUP1 PUSH0 MSTORE — mem[0:32] = value
  '8015603957', // 08: DUP1 ISZERO PUSH1 0x39 JUMPI — value == 0 → revert
  '8155', // 0d: DUP2 SSTORE — storage[key] = value; stack: key
  '604035', // 0f: PUSH1 0x40 CALLDATALOAD — key n
  '8015603457', // 12: DUP1 ISZERO PUSH1 0x34 JUMPI — n == 0 → done
  '60205fa0', // 17: PUSH1 0x20 PUSH0 LOG0 — log0(value)
  '60028110603457', // 1b: PUSH1 2 DUP2 LT PUSH1 0x34 JUMPI — n < 2 → done
  '8160205fa1', // 22: DUP2 PUSH1 0x20 PUSH0 LOG1 — log1(value; key)
  '60038110603457', // 27: PUSH1 3 DUP2 LT PUSH1 0x34 JUMPI — n < 3 → done
  '338260205fa2', // 2e: CALLER DUP3 PUSH1 0x20 PUSH0 LOG2 — log2(value; key, caller)
  '5b60205ff3', // 34: JUMPDEST PUSH1 0x20 PUSH0 RETURN — done: return value
  '5b815f5260205ffd', // 39: JUMPDEST DUP2 PUSH0 MSTORE PUSH1 0x20 PUSH0 REVERT — revert: key
].join('')}`;

/**
 * Constructor: records the deployer in slot 0 (so a creation writes storage too), then returns the
 * runtime, which follows these 12 bytes.
 */
export const LOG_STORE_INITCODE: Hex = `0x${[
  '335f55', // 00: CALLER PUSH0 SSTORE — storage[0] = deployer
  '604180', // 03: PUSH1 0x41 DUP1 — runtime length, twice
  '600c5f39', // 06: PUSH1 0x0c PUSH0 CODECOPY — mem[0:0x41] = code[0x0c:0x4d]
  '5ff3', // 0a: PUSH0 RETURN — return mem[0:0x41]
  LOG_STORE_RUNTIME.slice(2),
].join('')}`;

/** Most logs one LogStore call emits. */
export const LOG_STORE_MAX_LOGS = 3;

export interface LogStoreCall {
  key: bigint;
  /** 0 makes the call revert. */
  value: bigint;
  logs: number;
}

export function logStoreCalldata({ key, value, logs }: LogStoreCall): Hex {
  return concatHex([key, value, BigInt(logs)].map((word) => numberToHex(word, { size: 32 })));
}

/**
 * A LogStore call from `sender` (one log; the value marks which branch of a reorg it is on), with
 * fees any block of the reorg tests takes.
 */
export function signLogStoreCall(
  sender: { signTransaction(tx: TransactionSerializableEIP1559): Promise<Hex> },
  chainId: number,
  logStore: Hex,
  nonce: number,
  value: bigint,
): Promise<Hex> {
  return sender.signTransaction({
    chainId,
    type: 'eip1559',
    nonce,
    to: logStore,
    data: logStoreCalldata({ key: 7n, value, logs: 1 }),
    gas: 100_000n,
    maxFeePerGas: 100_000_000_000n,
    maxPriorityFeePerGas: 1n,
  });
}

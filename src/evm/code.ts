import { bytesKey } from '../primitives/hex.ts';
import { LruCache } from '../primitives/lru.ts';
import { bytesToBigint } from './words.ts';

/**
 * Code ready to run: padded with 33 zero bytes, so the interpreter reads past the end without a
 * bounds check (a PUSH at the end reads zeros, and running off the end reads STOP), with its jump
 * destinations found once per code hash and kept in a process-wide cache.
 */
export interface Code {
  readonly bytes: Uint8Array;
  /** Length of the code without the padding. */
  readonly length: number;
  /** One byte per code byte: 1 where a JUMPDEST opcode (not push data) is. */
  readonly jumpdests: Uint8Array;
  /**
   * The value each PUSH pushes, at its offset: made once per code, so a PUSH allocates nothing
   * (bigints are immutable, so one value serves every run).
   */
  readonly pushes: bigint[];
}

const PADDING = 33;
/** Bytes of analysed code kept (about twice the code's size each): thousands of contracts. */
const CACHE_BYTES = 64 * 1024 * 1024;
const cache = new LruCache<string, Code>(CACHE_BYTES, (code) => 2 * code.length + 128);

export function analyse(code: Uint8Array): Code {
  const length = code.length;
  const bytes = new Uint8Array(length + PADDING);
  bytes.set(code);
  const jumpdests = new Uint8Array(length);
  const pushes: bigint[] = new Array(length);
  for (let pc = 0; pc < length; pc++) {
    const op = bytes[pc] as number;
    if (op === 0x5b) jumpdests[pc] = 1;
    else if (op >= 0x60 && op <= 0x7f) {
      pushes[pc] = bytesToBigint(bytes, pc + 1, op - 0x5f);
      pc += op - 0x5f;
    }
  }
  return { bytes, length, jumpdests, pushes };
}

/** The analysed code of a code hash (deployed code). */
export function codeOf(code: Uint8Array, hash: Uint8Array): Code {
  const key = bytesKey(hash);
  let analysed = cache.get(key);
  if (analysed === undefined) {
    analysed = analyse(code);
    cache.set(key, analysed);
  }
  return analysed;
}

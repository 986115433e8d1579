import { open } from 'node:fs/promises';
import { UserError } from '../core/errors.ts';

export interface RawBlock {
  rlp: Uint8Array;
  file: string;
  /** Byte offset of the block in its file, for error messages. */
  offset: number;
}

const CHUNK = 4 * 1024 * 1024;

/**
 * Reads the blocks of a `geth export` file (consensus-RLP blocks back to back) one at a time, so a
 * chain file of any size streams through a fixed buffer. Truncated or non-list data is a UserError
 * naming the file and byte offset.
 */
export async function* readRlpBlocks(file: string): AsyncGenerator<RawBlock> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, 'r');
  } catch (e) {
    throw new UserError(`cannot read chain file ${file}: ${(e as Error).message}`);
  }
  try {
    let buffer = new Uint8Array(0);
    let bufferStart = 0; // file offset of buffer[0]
    let eof = false;
    while (true) {
      const item = buffer.length > 0 ? listLength(buffer, file, bufferStart) : undefined;
      if (item !== undefined && buffer.length >= item) {
        yield { rlp: buffer.slice(0, item), file, offset: bufferStart };
        buffer = buffer.subarray(item);
        bufferStart += item;
        continue;
      }
      if (eof) {
        if (buffer.length === 0) return;
        throw new UserError(
          `${file}: truncated block at byte ${bufferStart}: ${item === undefined ? 'incomplete header' : `needs ${item} bytes, ${buffer.length} left`}`,
        );
      }
      const chunk = new Uint8Array(Math.max(CHUNK, (item ?? 0) - buffer.length));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) eof = true;
      const next = new Uint8Array(buffer.length + bytesRead);
      next.set(buffer);
      next.set(chunk.subarray(0, bytesRead), buffer.length);
      buffer = next;
    }
  } finally {
    await handle.close();
  }
}

/** Total length (prefix included) of the RLP list at the start of `b`, or undefined if b is too short to tell. */
function listLength(b: Uint8Array, file: string, offset: number): number | undefined {
  const first = b[0] as number;
  if (first < 0xc0)
    throw new UserError(
      `${file}: byte ${offset} does not start an RLP list (0x${first.toString(16)}): not a chain file, or corrupt`,
    );
  if (first <= 0xf7) return 1 + (first - 0xc0);
  const lengthOfLength = first - 0xf7;
  if (b.length < 1 + lengthOfLength) return undefined;
  let length = 0;
  for (let i = 1; i <= lengthOfLength; i++) length = length * 256 + (b[i] as number);
  return 1 + lengthOfLength + length;
}

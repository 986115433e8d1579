import type { BatchDBOp, DB, EncodingOpts } from '@ethereumjs/util';
import { unprefixedHexToBytes } from '@ethereumjs/util';
import type { ChainStore } from '../../../src/store/types.ts';

// MerkleStateManager keeps code in the trie database under "c" ‖ codeHash (33 bytes, 66 hex chars);
// trie nodes are keyed by their 32-byte hash. The prefix tells them apart.
const CODE_KEY_HEX_LENGTH = 66;
const CODE_PREFIX_HEX = '63';

/**
 * The database under the state trie during import: reads come from the store, writes are held in
 * memory until the block they belong to is committed, so a block that fails verification leaves
 * nothing behind. Nodes are never deleted: every historical state root stays readable.
 */
export class BufferedTrieDb implements DB<string, string | Uint8Array> {
  private pendingNodes = new Map<string, Uint8Array>();
  private pendingCode = new Map<string, Uint8Array>();

  constructor(private readonly store: ChainStore) {}

  async get(key: string, _opts?: EncodingOpts): Promise<Uint8Array | undefined> {
    if (isCodeKey(key)) {
      const codeHash = key.slice(CODE_PREFIX_HEX.length);
      return (
        this.pendingCode.get(codeHash) ??
        (await this.store.getCode(unprefixedHexToBytes(codeHash))) ??
        undefined
      );
    }
    return (
      this.pendingNodes.get(key) ?? (await this.store.getTrieNode(unprefixedHexToBytes(key))) ?? undefined
    );
  }

  async put(key: string, value: string | Uint8Array, _opts?: EncodingOpts): Promise<void> {
    const bytes = typeof value === 'string' ? unprefixedHexToBytes(value) : value;
    if (isCodeKey(key)) this.pendingCode.set(key.slice(CODE_PREFIX_HEX.length), bytes);
    else this.pendingNodes.set(key, bytes);
  }

  async del(_key: string, _opts?: EncodingOpts): Promise<void> {
    // Old nodes stay: they are the state of earlier blocks.
  }

  async batch(ops: BatchDBOp<string, string | Uint8Array>[]): Promise<void> {
    for (const op of ops) if (op.type === 'put') await this.put(op.key, op.value);
  }

  shallowCopy(): DB<string, string | Uint8Array> {
    return this;
  }

  async open(): Promise<void> {}

  /** Hands over everything written since the last call, as the store's block write wants it. */
  takePending(): { trieNodes: Array<[Uint8Array, Uint8Array]>; code: Array<[Uint8Array, Uint8Array]> } {
    const toEntries = (m: Map<string, Uint8Array>) =>
      [...m].map(([k, v]): [Uint8Array, Uint8Array] => [unprefixedHexToBytes(k), v]);
    const out = { trieNodes: toEntries(this.pendingNodes), code: toEntries(this.pendingCode) };
    this.pendingNodes = new Map();
    this.pendingCode = new Map();
    return out;
  }

  /** Forgets writes of a block that was rejected. */
  discardPending(): void {
    this.pendingNodes.clear();
    this.pendingCode.clear();
  }
}

function isCodeKey(key: string): boolean {
  return key.length === CODE_KEY_HEX_LENGTH && key.startsWith(CODE_PREFIX_HEX);
}

import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../core/errors.ts';

/** A key kept in the datadir. Only its SHA-256 is stored: the key itself is shown once, at creation. */
export interface StoredKey {
  name: string;
  /** First characters of the key, to tell keys apart in `keys list` without revealing them. */
  prefix: string;
  sha256: string;
  createdAt: string;
  revokedAt?: string;
}

const KEYS_FILE = 'keys.json';
// Keys created or revoked by `ethtrace keys` in another process take effect within this time (the
// README promises a second); it is also how often open WebSockets are checked for revoked keys.
export const KEY_RELOAD_MS = 1000;

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** The keys file of a datadir; writes are atomic (temp file + rename) so a reader never sees half a file. */
export class KeyFile {
  readonly path: string;

  constructor(datadir: string) {
    this.path = join(datadir, KEYS_FILE);
  }

  read(): StoredKey[] {
    if (!existsSync(this.path)) return [];
    try {
      const parsed = JSON.parse(readFileSync(this.path, 'utf8')) as { keys?: StoredKey[] };
      return parsed.keys ?? [];
    } catch (e) {
      throw new UserError(`keys file ${this.path} is unreadable: ${(e as Error).message}`);
    }
  }

  private write(keys: StoredKey[]): void {
    mkdirSync(join(this.path, '..'), { recursive: true });
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ keys }, null, 2)}\n`, { mode: 0o600 });
    renameSync(tmp, this.path);
  }

  create(name: string | undefined): { key: string; stored: StoredKey } {
    const keys = this.read();
    const finalName = name ?? `key-${keys.length + 1}`;
    if (keys.some((k) => k.name === finalName && !k.revokedAt)) {
      throw new UserError(`a key named "${finalName}" already exists`);
    }
    // 32 hex characters, the shape of an Infura project id.
    const key = randomBytes(16).toString('hex');
    const stored: StoredKey = {
      name: finalName,
      prefix: key.slice(0, 6),
      sha256: hashKey(key),
      createdAt: new Date().toISOString(),
    };
    this.write([...keys, stored]);
    return { key, stored };
  }

  /** Revokes by key or by name; returns the revoked entry. */
  revoke(keyOrName: string): StoredKey {
    const keys = this.read();
    const digest = hashKey(keyOrName);
    const target = keys.find((k) => !k.revokedAt && (k.sha256 === digest || k.name === keyOrName));
    if (!target) throw new UserError(`no active key matches "${keyOrName}"`);
    target.revokedAt = new Date().toISOString();
    this.write(keys);
    return target;
  }
}

/**
 * Decides whether a key may use the service: keys given at start-up (flags, environment) plus the
 * active keys of the datadir's keys file, which is re-read when it changes.
 */
export class KeyRing {
  private fileDigests = new Set<string>();
  private fileStamp = -1;
  private lastCheck = 0;

  constructor(
    private readonly staticDigests: ReadonlySet<string>,
    private readonly file: KeyFile | null,
  ) {
    this.reload();
  }

  static from(keys: readonly string[], file: KeyFile | null): KeyRing {
    return new KeyRing(new Set(keys.map(hashKey)), file);
  }

  get size(): number {
    this.maybeReload();
    return this.staticDigests.size + this.fileDigests.size;
  }

  accepts(key: string): boolean {
    this.maybeReload();
    const digest = hashKey(key);
    return this.staticDigests.has(digest) || this.fileDigests.has(digest);
  }

  /** Re-reads the keys file now if it changed (one stat otherwise). */
  refresh(): void {
    this.lastCheck = Date.now();
    this.reload();
  }

  private maybeReload(): void {
    const now = Date.now();
    if (now - this.lastCheck < KEY_RELOAD_MS) return;
    this.lastCheck = now;
    this.reload();
  }

  /** Reads the keys file now, e.g. right after this process created the first key. */
  reload(): void {
    if (!this.file) return;
    const stamp = existsSync(this.file.path) ? statSync(this.file.path).mtimeMs : 0;
    if (stamp === this.fileStamp) return;
    this.fileStamp = stamp;
    this.fileDigests = new Set(
      this.file
        .read()
        .filter((k) => !k.revokedAt)
        .map((k) => k.sha256),
    );
  }
}

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { caught } from '../core/caught.ts';
import { UserError } from '../core/errors.ts';
import type { KeyLimits } from './access/bucket.ts';
import { type KeySettings, limitsOf } from './access/settings.ts';

/**
 * A key kept in the datadir. Only its SHA-256 is stored: the key itself is shown once, at creation.
 * Entries written before keys had settings have no `settings` (unlimited) and no secret, and read
 * as they always did; an entry's settings are added in place by `keys update`.
 */
export interface StoredKey {
  name: string;
  /** First characters of the key, to tell keys apart in `keys list` without revealing them. */
  prefix: string;
  sha256: string;
  createdAt: string;
  revokedAt?: string;
  updatedAt?: string;
  settings?: KeySettings;
  /**
   * SHA-256 of the key's secret, when it requires one (HTTP Basic auth). A fast hash is enough: a
   * secret is 32 random bytes, so there is no dictionary to try and 2^256 guesses to make, which is
   * what a slow hash (scrypt, argon2) defends a human's password against; and every request checks
   * it, where a slow hash would cost milliseconds of CPU each.
   */
  secretSha256?: string;
}

const KEYS_FILE = 'keys.json';
// Keys created, updated or revoked by `ethtrace keys` in another process take effect within this
// time (the README promises a second); it is also how often open WebSockets are checked for
// revoked keys and keys that spent their day.
export const KEY_RELOAD_MS = 1000;
/** How long `ethtrace keys` waits for another one to finish writing the keys file. */
const LOCK_WAIT_MS = 5_000;
/** A lock older than this was left by a process that died while holding it. */
const LOCK_STALE_MS = 30_000;

/** Digests a KeyRing remembers before it starts over (a few hundred KiB at most). */
const MAX_REMEMBERED_DIGESTS = 4096;

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** The id a key's usage and limits are kept under: its hash's start (stable across renames). */
export function keyId(sha256: string): string {
  return sha256.slice(0, 16);
}

/** What `create` and `update` may change besides the settings. */
export interface KeyChange {
  settings?: KeySettings;
  /** true: make a new secret (returned once); false: stop requiring one. */
  secret?: boolean;
  rename?: string;
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

  /**
   * Read, change, write, with the file locked against another `ethtrace keys` doing the same at
   * once (the second would otherwise write back a list without the first one's change).
   */
  private modify<T>(change: (keys: StoredKey[]) => T): T {
    mkdirSync(join(this.path, '..'), { recursive: true });
    const lock = `${this.path}.lock`;
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      try {
        closeSync(openSync(lock, 'wx'));
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        if (Date.now() - statSafe(lock) > LOCK_STALE_MS) unlinkSafe(lock);
        else if (Date.now() > deadline)
          throw new UserError(`${lock} is held by another \`ethtrace keys\`; remove it if none is running`);
        else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
      }
    }
    try {
      const keys = this.read();
      const out = change(keys);
      this.write(keys);
      return out;
    } finally {
      unlinkSafe(lock);
    }
  }

  create(
    name: string | undefined,
    change: KeyChange = {},
  ): { key: string; secret: string | null; stored: StoredKey } {
    return this.modify((keys) => {
      const finalName = name ?? `key-${keys.length + 1}`;
      if (keys.some((k) => k.name === finalName && !k.revokedAt)) {
        throw new UserError(`a key named "${finalName}" already exists`);
      }
      const made = newKey(finalName, change);
      keys.push(made.stored);
      return made;
    });
  }

  /** The active key named `keyOrName`, or whose key it is. */
  find(keyOrName: string): StoredKey {
    const target = findActive(this.read(), keyOrName);
    if (!target) throw new UserError(`no active key matches "${keyOrName}"`);
    return target;
  }

  /**
   * Changes an active key's settings (replaced whole by `change.settings`), secret or name; returns
   * the entry and the new secret, shown once.
   */
  update(keyOrName: string, change: KeyChange): { stored: StoredKey; secret: string | null } {
    return this.modify((keys) => {
      const target = findActive(keys, keyOrName);
      if (!target) throw new UserError(`no active key matches "${keyOrName}"`);
      if (change.rename !== undefined && change.rename !== target.name) {
        if (keys.some((k) => k.name === change.rename && !k.revokedAt))
          throw new UserError(`a key named "${change.rename}" already exists`);
      }
      return { stored: target, secret: applyChange(target, change) };
    });
  }

  /** Revokes by key or by name; returns the revoked entry. */
  revoke(keyOrName: string): StoredKey {
    return this.modify((keys) => {
      const target = findActive(keys, keyOrName);
      if (!target) throw new UserError(`no active key matches "${keyOrName}"`);
      target.revokedAt = new Date().toISOString();
      return target;
    });
  }
}

export function findActive(keys: readonly StoredKey[], keyOrName: string): StoredKey | undefined {
  const digest = hashKey(keyOrName);
  return keys.find((k) => !k.revokedAt && (k.sha256 === digest || k.name === keyOrName));
}

/** A new key named `name`: the key and its secret (returned to be shown once) and the entry kept. */
export function newKey(
  name: string,
  change: KeyChange,
): { key: string; secret: string | null; stored: StoredKey } {
  // 32 hex characters, the shape of an Infura project id.
  const key = randomBytes(16).toString('hex');
  const stored: StoredKey = {
    name,
    prefix: key.slice(0, 6),
    sha256: hashKey(key),
    createdAt: new Date().toISOString(),
    ...(change.settings && Object.keys(change.settings).length > 0 ? { settings: change.settings } : {}),
  };
  const secret = change.secret ? newSecret(stored) : null;
  return { key, secret, stored };
}

/**
 * Applies `change` to an active key in place (a new name is the caller's to check is free); returns
 * the new secret, shown once, or null.
 */
export function applyChange(target: StoredKey, change: KeyChange): string | null {
  if (change.rename !== undefined) target.name = change.rename;
  if (change.settings) {
    if (Object.keys(change.settings).length > 0) target.settings = change.settings;
    else delete target.settings;
  }
  let secret: string | null = null;
  if (change.secret === true) secret = newSecret(target);
  if (change.secret === false) delete target.secretSha256;
  target.updatedAt = new Date().toISOString();
  return secret;
}

/** A new secret for `stored` (32 random bytes, hex), kept as its hash; returned to be shown once. */
function newSecret(stored: StoredKey): string {
  const secret = randomBytes(32).toString('hex');
  stored.secretSha256 = hashKey(secret);
  return secret;
}

function statSafe(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return Date.now();
  }
}

/** Removes a lock file: one already gone is fine; one that stays is logged and counted. */
function unlinkSafe(path: string): void {
  try {
    unlinkSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
      caught('lock-file-removal', `the lock file ${path} cannot be removed: ${(e as Error).message}`);
  }
}

/** An accepted key as the access policy sees it: never the key itself. */
export interface KeyEntry {
  id: string;
  name: string;
  settings: KeySettings | undefined;
  limits: KeyLimits;
  /** SHA-256 of the secret the key requires, or null. */
  secretSha256: string | null;
}

/** A key's verdict at the door: its entry, or why it is refused (401). */
export type KeyCheck = { ok: true; entry: KeyEntry } | { ok: false; problem: 'unknown' | 'secret' };

/**
 * Decides whether a key may use the service: keys given at start-up (flags, environment) plus the
 * active keys of the datadir's keys file, which is re-read when it changes, or of the shared
 * database (`--database`), which src/transport/keyStore.ts KeyMirror hands it as they change.
 * Either way a request is answered from memory.
 */
export class KeyRing {
  private readonly digests = new Map<string, string>();
  private fileEntries = new Map<string, KeyEntry>();
  private readonly staticEntries = new Map<string, KeyEntry>();
  private fileStamp = '';
  private lastCheck = 0;
  private readonly changeListeners = new Set<() => void>();

  constructor(
    staticDigests: ReadonlySet<string>,
    private readonly file: KeyFile | null,
  ) {
    for (const digest of staticDigests) {
      const id = keyId(digest);
      // Keys from flags have no settings: unlimited, no secret, and usage under a name from their hash.
      this.staticEntries.set(digest, {
        id,
        name: `api-key:${id.slice(0, 6)}`,
        settings: undefined,
        limits: limitsOf(undefined),
        secretSha256: null,
      });
    }
    this.reload();
  }

  static from(keys: readonly string[], file: KeyFile | null): KeyRing {
    return new KeyRing(new Set(keys.map(hashKey)), file);
  }

  get size(): number {
    this.maybeReload();
    return this.staticEntries.size + this.fileEntries.size;
  }

  accepts(key: string): boolean {
    return this.lookup(key) !== null;
  }

  /** The entry of an accepted key, or null. */
  lookup(key: string): KeyEntry | null {
    return this.byDigest(this.digestOf(key));
  }

  /**
   * A key's SHA-256, remembered: every request names its key and a hash per request was a tenth of
   * the cost of a cheap call. Bounded, since the keys asked for are the client's choice.
   */
  private digestOf(key: string): string {
    let digest = this.digests.get(key);
    if (digest === undefined) {
      if (this.digests.size >= MAX_REMEMBERED_DIGESTS) this.digests.clear();
      digest = hashKey(key);
      this.digests.set(key, digest);
    }
    return digest;
  }

  /** The entry of an accepted key by its SHA-256 (a caller that keeps the digest hashes once). */
  byDigest(digest: string): KeyEntry | null {
    this.maybeReload();
    return this.staticEntries.get(digest) ?? this.fileEntries.get(digest) ?? null;
  }

  /**
   * The key of a URL with the request's Authorization header: a key that requires its secret takes
   * it as HTTP Basic auth, the secret as the password (`curl --user :SECRET`), any user name.
   */
  check(key: string, authorization: string | undefined): KeyCheck {
    const entry = this.lookup(key);
    if (!entry) return { ok: false, problem: 'unknown' };
    if (entry.secretSha256 === null) return { ok: true, entry };
    const secret = basicPassword(authorization);
    if (secret === null) return { ok: false, problem: 'secret' };
    const given = Buffer.from(hashKey(secret), 'hex');
    const kept = Buffer.from(entry.secretSha256, 'hex');
    return given.length === kept.length && timingSafeEqual(given, kept)
      ? { ok: true, entry }
      : { ok: false, problem: 'secret' };
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
    let stamp = 'none';
    if (existsSync(this.file.path)) {
      const s = statSync(this.file.path);
      // The inode changes with every write (each is a rename), so two writes within the mtime's
      // resolution are still told apart.
      stamp = `${s.ino}:${s.mtimeMs}:${s.size}`;
    }
    if (stamp === this.fileStamp) return;
    this.fileStamp = stamp;
    this.fileEntries = entriesOf(this.file.read());
  }

  /**
   * The stored keys, all of them, from the shared database: replaces what was known, and tells the
   * listeners (the server closes the sockets of keys no longer accepted at once).
   */
  setStored(keys: readonly StoredKey[]): void {
    this.fileEntries = entriesOf(keys);
    for (const listener of this.changeListeners) listener();
  }

  /** Calls `listener` after each `setStored`; returns how to stop. */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }
}

/** The active keys of `keys` by their hash. */
function entriesOf(keys: readonly StoredKey[]): Map<string, KeyEntry> {
  const entries = new Map<string, KeyEntry>();
  for (const k of keys) {
    if (k.revokedAt) continue;
    entries.set(k.sha256, {
      id: keyId(k.sha256),
      name: k.name,
      settings: k.settings,
      limits: limitsOf(k.settings),
      secretSha256: k.secretSha256 ?? null,
    });
  }
  return entries;
}

/** The password of a `Basic` Authorization header, or null. */
function basicPassword(authorization: string | undefined): string | null {
  if (authorization === undefined) return null;
  const m = /^basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
  if (!m?.[1]) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? null : decoded.slice(colon + 1);
}

import { UserError } from '../core/errors.ts';
import {
  applyChange,
  hashKey,
  type KeyChange,
  type KeyFile,
  type KeyRing,
  newKey,
  type StoredKey,
} from './apiKeys.ts';

/**
 * Where the keys are kept: the datadir's keys file (one host), or a PostgreSQL database shared by
 * every host of the service (`--database`, src/store/postgres/keys.ts). `ethtrace keys` changes them
 * through this; a server reads them through its KeyRing, from memory.
 */
export interface KeyStore {
  /** Where, for messages: the file's path or the database's URL without credentials. */
  readonly where: string;
  /** Every key, revoked ones too, oldest first. */
  read(): Promise<StoredKey[]>;
  create(
    name: string | undefined,
    change?: KeyChange,
  ): Promise<{ key: string; secret: string | null; stored: StoredKey }>;
  /** The active key named `keyOrName`, or whose key it is. */
  find(keyOrName: string): Promise<StoredKey>;
  /** Changes an active key; `change` is worked out from the key as it is (its settings are replaced whole). */
  update(
    keyOrName: string,
    change: (current: StoredKey) => KeyChange,
  ): Promise<{ stored: StoredKey; secret: string | null }>;
  revoke(keyOrName: string): Promise<StoredKey>;
}

/** The datadir's keys file as a KeyStore: what `ethtrace keys` did before `--database`, unchanged. */
export class FileKeyStore implements KeyStore {
  constructor(readonly file: KeyFile) {}

  get where(): string {
    return this.file.path;
  }

  async read(): Promise<StoredKey[]> {
    return this.file.read();
  }

  async create(name: string | undefined, change: KeyChange = {}) {
    return this.file.create(name, change);
  }

  async find(keyOrName: string): Promise<StoredKey> {
    return this.file.find(keyOrName);
  }

  async update(keyOrName: string, change: (current: StoredKey) => KeyChange) {
    return this.file.update(keyOrName, change(this.file.find(keyOrName)));
  }

  async revoke(keyOrName: string): Promise<StoredKey> {
    return this.file.revoke(keyOrName);
  }
}

/** The rows of the keys in a database (src/store/postgres/keys.ts PostgresKeyTable). */
export interface KeyTable {
  readonly description: string;
  all(): Promise<StoredKey[]>;
  findActive(sha256: string, name: string): Promise<StoredKey | undefined>;
  count(): Promise<number>;
  insert(k: StoredKey): Promise<boolean>;
  modify<T>(
    sha256: string,
    name: string,
    change: (k: StoredKey) => T,
  ): Promise<{ record: StoredKey; out: T } | undefined>;
}

/** The keys of a shared database: each change is one transaction, announced to every host in it. */
export class DatabaseKeyStore implements KeyStore {
  constructor(private readonly table: KeyTable) {}

  get where(): string {
    return this.table.description;
  }

  read(): Promise<StoredKey[]> {
    return this.table.all();
  }

  async create(name: string | undefined, change: KeyChange = {}) {
    const made = newKey(name ?? `key-${(await this.table.count()) + 1}`, change);
    await this.table.insert(made.stored);
    return made;
  }

  async find(keyOrName: string): Promise<StoredKey> {
    const found = await this.table.findActive(hashKey(keyOrName), keyOrName);
    if (!found) throw new UserError(`no active key matches "${keyOrName}"`);
    return found;
  }

  async update(keyOrName: string, change: (current: StoredKey) => KeyChange) {
    const done = await this.table.modify(hashKey(keyOrName), keyOrName, (k) => applyChange(k, change(k)));
    if (!done) throw new UserError(`no active key matches "${keyOrName}"`);
    return { stored: done.record, secret: done.out };
  }

  async revoke(keyOrName: string): Promise<StoredKey> {
    const done = await this.table.modify(hashKey(keyOrName), keyOrName, (k) => {
      k.revokedAt = new Date().toISOString();
    });
    if (!done) throw new UserError(`no active key matches "${keyOrName}"`);
    return done.record;
  }

  /**
   * Copies keys from a keys file: each is added as it is (hash, name, dates, settings, secret), or
   * skipped when a key with its hash is there already, so a second run changes nothing. An active key
   * whose name an active key of the database has taken is refused.
   */
  async importKeys(keys: readonly StoredKey[]): Promise<{ added: StoredKey[]; skipped: StoredKey[] }> {
    const added: StoredKey[] = [];
    const skipped: StoredKey[] = [];
    for (const k of keys) ((await this.table.insert(k)) ? added : skipped).push(k);
    return { added, skipped };
  }
}

/** The LISTEN connection the mirror follows changes on (src/store/postgres/listener.ts). */
export interface ChangeFeed {
  start(): Promise<void>;
  close(): Promise<void>;
}

/** What a mirror has seen, for /ready and /metrics. */
export interface MirrorHealth {
  up: boolean;
  /** Times the database was lost (each outage once, as it began). */
  outages: number;
  /** Full re-reads that failed. */
  failedReads: number;
}

/**
 * Keeps a KeyRing equal to the database's keys: re-read whole when a change is announced (LISTEN,
 * within milliseconds), when the announcing connection is back after a loss (what was announced
 * meanwhile was never heard), and every `refreshMs` whatever happens (a safety net for a lost
 * announcement). While the database cannot be reached the ring keeps the keys it last had: known
 * keys are served, and a change made meanwhile applies once it is back.
 */
export class KeyMirror {
  private listening = false;
  private readProblem: string | null = null;
  private listenProblem: string | null = null;
  private reading: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private feed: ChangeFeed | null = null;
  private wasUp = true;
  private outages = 0;
  private failedReads = 0;

  constructor(
    private readonly table: KeyTable,
    private readonly ring: KeyRing,
    private readonly refreshMs: number,
    private readonly warn: (line: string) => void,
  ) {}

  /** The first read (its failure refuses the start), then the feed and the timer. */
  async start(openFeed: (events: FeedEvents) => ChangeFeed): Promise<void> {
    this.ring.setStored(await this.table.all());
    this.feed = openFeed({
      notify: () => this.refresh(),
      up: () => {
        this.listening = true;
        this.listenProblem = null;
        this.refresh();
      },
      down: (reason) => {
        this.listening = false;
        this.listenProblem = `its change feed is lost (${reason})`;
        this.changed();
      },
    });
    await this.feed.start();
    this.timer = setInterval(() => this.refresh(), this.refreshMs);
    this.timer.unref();
  }

  /** Re-reads the keys; a change announced while a read is under way is read again after it. */
  refresh(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = (async () => {
      do {
        this.again = false;
        try {
          this.ring.setStored(await this.table.all());
          this.readProblem = null;
        } catch (e) {
          this.failedReads++;
          this.readProblem = `its keys cannot be read (${(e as Error).message})`;
        }
        this.changed();
      } while (this.again);
    })().finally(() => {
      this.reading = null;
    });
    return this.reading;
  }

  /** Why the keys may be out of date, or null. */
  problem(): string | null {
    const why = this.listenProblem ?? this.readProblem;
    if (why === null) return null;
    return `the keys database ${this.table.description}: ${why}; the keys known are served, changes wait for it`;
  }

  health(): MirrorHealth {
    return { up: this.problem() === null, outages: this.outages, failedReads: this.failedReads };
  }

  /** Told at warn once as an outage begins and once as it ends. */
  private changed(): void {
    const problem = this.problem();
    const up = problem === null && this.listening;
    if (problem !== null && this.wasUp) {
      this.wasUp = false;
      this.outages++;
      this.warn(problem);
    } else if (up && !this.wasUp) {
      this.wasUp = true;
      this.warn(`the keys database ${this.table.description} is back: changes apply again`);
    }
  }

  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    await this.feed?.close();
    await this.reading;
  }
}

export interface FeedEvents {
  notify(payload: string): void;
  up(): void;
  down(reason: string): void;
}

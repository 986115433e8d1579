import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './privateRedis.ts';

/**
 * PostgreSQL for tests. The machine's server (127.0.0.1:5432, trust auth, user postgres; CI has the
 * same) is shared by every test and every helper at once, so a test never uses a database it did not
 * make: `testDatabase` creates one of its own and drops it at the end. A test that must take the
 * server away (an outage) starts a private one with `privatePostgres` and stops that.
 * Self-contained: nothing of src/ is imported, so any test may use it.
 */

const SHARED = process.env.ETHTRACE_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** `postgres://…/ethtrace_t_<random>` on the server of `adminUrl`, made now, dropped by `drop`. */
export async function testDatabase(adminUrl = SHARED): Promise<TestDatabase> {
  const name = `ethtrace_t_${randomBytes(6).toString('hex')}`;
  await admin(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    // WITH (FORCE) ends the connections a test left open (a server it killed, a pool it leaked).
    drop: () => admin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

const BIN = process.env.ETHTRACE_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** Runs a PostgreSQL binary as the postgres user (the server refuses to run as root). */
function asPostgres(binary: string, args: string[]): void {
  const runAs =
    process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', join(BIN, binary), ...args]] : null;
  if (runAs) execFileSync(runAs[0] as string, runAs[1] as string[], { stdio: 'pipe' });
  else execFileSync(join(BIN, binary), args, { stdio: 'pipe' });
}

export interface PrivatePostgres {
  /** The `postgres` database of this server (trust auth, user postgres). */
  url: string;
  port: number;
  start(): void;
  /** Stops the server at once (`-m immediate`: connections are cut, as a crash or a lost host would). */
  stop(): void;
  /** Stops it and removes its files. */
  destroy(): void;
}

/**
 * A PostgreSQL server of the calling test's own, on a free port, its socket and files in a temporary
 * directory: a test may stop and start it (an outage) without touching anyone else's.
 */
export function privatePostgres(): Promise<PrivatePostgres> {
  return freePort().then((port) => {
    const dir = mkdtempSync(join(tmpdir(), 'ethtrace-pg-'));
    chmodSync(dir, 0o777);
    const data = join(dir, 'data');
    if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
    asPostgres('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    let running = false;
    const server: PrivatePostgres = {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port,
      start() {
        asPostgres('pg_ctl', [
          '-D',
          data,
          '-o',
          `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
          '-l',
          join(dir, 'log'),
          '-w',
          'start',
        ]);
        running = true;
      },
      stop() {
        if (!running) return;
        asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
        running = false;
      },
      destroy() {
        server.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
    server.start();
    return server;
  });
}

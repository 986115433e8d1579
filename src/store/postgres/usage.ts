import type { Postgres } from './pool.ts';

/**
 * Usage of every host in PostgreSQL (`--database`): one row per minute, host, key, method and status
 * (`usage_minutes`), added to by batches (src/transport/access/usageShipper.ts), and the batches
 * taken so far (`usage_flushes`), so that a batch sent twice is added once.
 */

/** A row as stored: the minute (ms since the epoch), the host that served it, and its counts. */
export interface StoredUsageRow {
  minute: number;
  host: string;
  keyId: string;
  key: string;
  method: string;
  status: string;
  requests: number;
  credits: number;
}

export interface StoredBatch {
  host: string;
  writer: string;
  seq: number;
  rows: ReadonlyArray<Omit<StoredUsageRow, 'host'>>;
}

/**
 * A flush's records are kept this long: long enough for any retry of a batch (a writer retries
 * its unacknowledged batch every flush, and a process lives no longer than its writer name).
 */
const FLUSH_RECORDS_KEPT = '2 days';
/** Every this many batches of a writer, its flush records past FLUSH_RECORDS_KEPT are removed. */
const PRUNE_EVERY = 1000;

/**
 * Adds a batch's counts, once: the batch's (writer, seq) is recorded in the same transaction, and a
 * batch already recorded adds nothing. 'already' when it was (an acknowledgement lost before).
 * Rows are upserted in key order, so two processes of one host adding to the same rows wait for
 * each other rather than deadlock.
 */
export async function writeUsageBatch(db: Postgres, batch: StoredBatch): Promise<'written' | 'already'> {
  const rows = [...batch.rows].sort(
    (a, b) =>
      cmp(a.keyId, b.keyId) || a.minute - b.minute || cmp(a.method, b.method) || cmp(a.status, b.status),
  );
  return db.transaction(async (client) => {
    const flush = await client.query(
      'INSERT INTO usage_flushes (writer, seq, host, rows) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
      [batch.writer, batch.seq, batch.host, rows.length],
    );
    // Already written by an earlier try whose acknowledgement was lost: nothing to add.
    if (flush.rowCount === 0) return 'already';
    await client.query(
      `INSERT INTO usage_minutes (minute, key_id, host, method, status, key_name, requests, credits)
         SELECT m, k, $3, me, s, n, r, c
         FROM unnest($1::timestamptz[], $2::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[])
           AS t(m, k, me, s, n, r, c)
         ON CONFLICT (key_id, minute, host, method, status) DO UPDATE SET
           requests = usage_minutes.requests + EXCLUDED.requests,
           credits = usage_minutes.credits + EXCLUDED.credits,
           key_name = EXCLUDED.key_name`,
      [
        rows.map((r) => new Date(r.minute).toISOString()),
        rows.map((r) => r.keyId),
        batch.host,
        rows.map((r) => r.method),
        rows.map((r) => r.status),
        rows.map((r) => r.key),
        rows.map((r) => r.requests),
        rows.map((r) => r.credits),
      ],
    );
    if (batch.seq % PRUNE_EVERY === 0)
      await client.query(
        `DELETE FROM usage_flushes WHERE writer = $1 AND at < now() - interval '${FLUSH_RECORDS_KEPT}'`,
        [batch.writer],
      );
    return 'written';
  });
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

interface RowOut {
  minute: string;
  host: string;
  key_id: string;
  key_name: string;
  method: string;
  status: string;
  requests: string;
  credits: string;
}

/** Rows of minutes that end after `since` (ms), of one host or all, oldest first. */
export async function readUsageRows(
  db: Postgres,
  since: number,
  filter: { host?: string; keyIds?: readonly string[] } = {},
): Promise<StoredUsageRow[]> {
  const params: unknown[] = [new Date(since - 60_000).toISOString()];
  let where = 'minute > $1';
  if (filter.host !== undefined) {
    params.push(filter.host);
    where += ` AND host = $${params.length}`;
  }
  if (filter.keyIds !== undefined) {
    params.push(filter.keyIds);
    where += ` AND key_id = ANY($${params.length}::text[])`;
  }
  const result = await db.query<RowOut>(
    `SELECT (extract(epoch FROM minute) * 1000)::bigint::text AS minute, host, key_id, key_name, method,
            status, requests::text, credits::text
     FROM usage_minutes WHERE ${where} ORDER BY minute, host, key_id, method, status`,
    params,
  );
  return result.rows.map((r) => ({
    minute: Number(r.minute),
    host: r.host,
    keyId: r.key_id,
    key: r.key_name,
    method: r.method,
    status: r.status,
    requests: Number(r.requests),
    credits: Number(r.credits),
  }));
}

/** Credits a key has spent since `from` (ms) on every host: what its day's ledger is rebuilt from. */
export async function creditsSince(db: Postgres, keyId: string, from: number): Promise<number> {
  const result = await db.query<{ credits: string }>(
    'SELECT coalesce(sum(credits), 0)::text AS credits FROM usage_minutes WHERE key_id = $1 AND minute >= $2',
    [keyId, new Date(from).toISOString()],
  );
  return Number(result.rows[0]?.credits ?? 0);
}

/** One host's or one key's usage since 00:00 UTC, all hosts together for a key. */
export interface UsageTotal {
  name: string;
  requests: number;
  credits: number;
}

/** The whole service's usage today, by host and by key (name): what /metrics shows with `--database`. */
export interface ServiceUsage {
  /** 00:00 UTC of the day, ms. */
  since: number;
  hosts: UsageTotal[];
  keys: UsageTotal[];
}

/**
 * How long one reading of the service's usage serves /metrics: a scrape every few seconds from
 * each of several scrapers then costs the database one aggregate query per this, not one each.
 */
export const SERVICE_USAGE_CACHE_MS = 5_000;

/** Today's usage of the whole service, read at most once per SERVICE_USAGE_CACHE_MS. */
export function serviceUsageOf(db: Postgres, now: () => number = Date.now): () => Promise<ServiceUsage> {
  let cached: { at: number; value: Promise<ServiceUsage> } | null = null;
  return () => {
    const at = now();
    if (cached && at - cached.at < SERVICE_USAGE_CACHE_MS) return cached.value;
    const value = readServiceUsage(db, at);
    const entry = { at, value };
    cached = entry;
    // A failed reading is not kept: the next scrape asks again.
    value.catch((e: unknown) => {
      if (cached === entry) cached = null;
      return e;
    });
    return value;
  };
}

async function readServiceUsage(db: Postgres, now: number): Promise<ServiceUsage> {
  const since = now - (now % 86_400_000);
  const result = await db.query<{
    host: string;
    key_id: string;
    key_name: string;
    requests: string;
    credits: string;
  }>(
    `SELECT host, key_id, max(key_name) AS key_name, sum(requests)::text AS requests, sum(credits)::text AS credits
     FROM usage_minutes WHERE minute >= $1 GROUP BY host, key_id`,
    [new Date(since).toISOString()],
  );
  const hosts = new Map<string, UsageTotal>();
  const keys = new Map<string, UsageTotal>();
  for (const r of result.rows) {
    for (const [map, name] of [
      [hosts, r.host],
      [keys, r.key_name],
    ] as const) {
      const t = map.get(name) ?? { name, requests: 0, credits: 0 };
      t.requests += Number(r.requests);
      t.credits += Number(r.credits);
      map.set(name, t);
    }
  }
  return { since, hosts: [...hosts.values()], keys: [...keys.values()] };
}

/** One host's usage over a range: what the dashboard's hosts table shows. */
export interface HostUsage {
  host: string;
  requests: number;
  credits: number;
  /** Answered with a JSON-RPC error. */
  errors: number;
  /** Refused by a key's limits or allow-lists. */
  refused: number;
}

/**
 * Each host's usage over the last `rangeMs`, every host of the service, read at most once per
 * SERVICE_USAGE_CACHE_MS for each range (the dashboard asks every 5 s from each open page).
 */
export function hostsUsageOf(
  db: Postgres,
  now: () => number = Date.now,
): (rangeMs: number) => Promise<HostUsage[]> {
  const cached = new Map<number, { at: number; value: Promise<HostUsage[]> }>();
  return (rangeMs) => {
    const at = now();
    const hit = cached.get(rangeMs);
    if (hit && at - hit.at < SERVICE_USAGE_CACHE_MS) return hit.value;
    const value = readHostsUsage(db, at - rangeMs);
    const entry = { at, value };
    cached.set(rangeMs, entry);
    // A failed reading is not kept: the next request asks again.
    value.catch((e: unknown) => {
      if (cached.get(rangeMs) === entry) cached.delete(rangeMs);
      return e;
    });
    return value;
  };
}

async function readHostsUsage(db: Postgres, since: number): Promise<HostUsage[]> {
  const result = await db.query<{
    host: string;
    requests: string;
    credits: string;
    errors: string;
    refused: string;
  }>(
    `SELECT host, sum(requests)::text AS requests, sum(credits)::text AS credits,
            coalesce(sum(requests) FILTER (WHERE status <> 'ok' AND status NOT LIKE 'refused-%'), 0)::text AS errors,
            coalesce(sum(requests) FILTER (WHERE status LIKE 'refused-%'), 0)::text AS refused
     FROM usage_minutes WHERE minute > $1 GROUP BY host ORDER BY host`,
    [new Date(since - 60_000).toISOString()],
  );
  return result.rows.map((r) => ({
    host: r.host,
    requests: Number(r.requests),
    credits: Number(r.credits),
    errors: Number(r.errors),
    refused: Number(r.refused),
  }));
}

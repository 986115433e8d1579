import { UserError } from '../../core/errors.ts';
import { contractsOf, isAddress } from '../../rpc/contracts.ts';
import type { KeyLimits } from './bucket.ts';

/** A key's settings, as kept (with the key's hash) in the datadir's keys file. */
export interface KeySettings {
  /** Credits per second (token bucket); absent: unlimited. */
  creditsPerSecond?: number;
  /** The bucket's depth; absent: one second's worth (creditsPerSecond). */
  burst?: number;
  /** Credits per UTC day; absent: unlimited. */
  creditsPerDay?: number;
  allow?: AllowLists;
}

/** Infura's four allow-lists: every kind that has entries must pass (AND), any entry of a kind will do (OR). */
export interface AllowLists {
  /** Lower-case addresses. */
  contracts?: string[];
  /** `https://app.example.com`, `*.example.com`, `https://` (a scheme alone). */
  origins?: string[];
  /** Substrings of the User-Agent header. */
  userAgents?: string[];
  methods?: string[];
}

export type AllowKind = keyof AllowLists;
export const ALLOW_KINDS: readonly AllowKind[] = ['contracts', 'origins', 'userAgents', 'methods'];

/** Infura's bound on the entries of one allow-list. */
export const MAX_ALLOW_ENTRIES = 30;

export function limitsOf(settings: KeySettings | undefined): KeyLimits {
  const perSecond = settings?.creditsPerSecond ?? null;
  return {
    creditsPerSecond: perSecond,
    // One second's worth by default: a key may spend its whole second at once, as Infura's limit is
    // per second, and no more.
    burst: settings?.burst ?? perSecond ?? 0,
    creditsPerDay: settings?.creditsPerDay ?? null,
  };
}

// --- checking entries as they are given to `ethtrace keys` ----------------------------------------

const SCHEME = '[a-zA-Z][a-zA-Z0-9+.-]*';
const HOST = '(\\*\\.)?[a-zA-Z0-9-]+(\\.[a-zA-Z0-9-]+)*(:[0-9]{1,5})?';
const ORIGIN_ENTRY = new RegExp(`^(${SCHEME}://)?${HOST}$|^${SCHEME}://$`);
const METHOD_NAME = /^[A-Za-z0-9_]+$/;
const MAX_USER_AGENT_CHARS = 256;

/** One allow-list entry as stored (addresses and hosts lower-case), or a UserError saying why not. */
export function checkEntry(kind: AllowKind, entry: string): string {
  switch (kind) {
    case 'contracts':
      if (!isAddress(entry))
        throw new UserError(`--allow-contract ${entry} is not an address (0x and 40 hex digits)`);
      return entry.toLowerCase();
    case 'origins':
      if (!ORIGIN_ENTRY.test(entry))
        throw new UserError(
          `--allow-origin ${entry} is not an origin: [scheme://]host[:port], *.host for its subdomains, or scheme:// alone`,
        );
      return entry.toLowerCase();
    case 'userAgents':
      if (entry === '' || entry.length > MAX_USER_AGENT_CHARS)
        throw new UserError(`--allow-user-agent takes 1 to ${MAX_USER_AGENT_CHARS} characters`);
      return entry;
    case 'methods':
      if (!METHOD_NAME.test(entry)) throw new UserError(`--allow-method ${entry} is not a method name`);
      return entry;
  }
}

/** The settings with every number and list checked; throws a UserError naming the first problem. */
export function checkSettings(settings: KeySettings): KeySettings {
  for (const [flag, value] of [
    ['credits-per-second', settings.creditsPerSecond],
    ['burst', settings.burst],
    ['credits-per-day', settings.creditsPerDay],
  ] as const) {
    if (value !== undefined && !(Number.isSafeInteger(value) && value > 0))
      throw new UserError(`--${flag} ${value} is not a positive whole number`);
  }
  if (settings.burst !== undefined && settings.creditsPerSecond === undefined)
    throw new UserError('--burst applies to a key with --credits-per-second');
  for (const kind of ALLOW_KINDS) {
    const list = settings.allow?.[kind] ?? [];
    if (list.length > MAX_ALLOW_ENTRIES)
      throw new UserError(
        `at most ${MAX_ALLOW_ENTRIES} ${KIND_NAMES[kind]} may be allowed (${list.length} given)`,
      );
  }
  return settings;
}

export const KIND_NAMES: Record<AllowKind, string> = {
  contracts: 'contract addresses',
  origins: 'origins',
  userAgents: 'user agents',
  methods: 'methods',
};

// --- applying them to a request ---------------------------------------------------------------------

export interface CallShape {
  method: string;
  params: unknown;
}

/**
 * Which allow-list refuses a body (null: none does). Every list with entries must pass; the contract
 * list applies to the methods that name contracts (src/rpc/contracts.ts), every address of a call
 * must be on it.
 */
export function refusingList(
  allow: AllowLists | undefined,
  headers: { origin?: string | undefined; userAgent?: string | undefined },
  calls: readonly CallShape[],
): AllowKind | null {
  if (!allow) return null;
  const { origins, userAgents, methods, contracts } = allow;
  if (origins?.length && !originAllowed(origins, headers.origin)) return 'origins';
  if (userAgents?.length) {
    const agent = headers.userAgent ?? '';
    if (!userAgents.some((entry) => agent.includes(entry))) return 'userAgents';
  }
  if (methods?.length && !calls.every((c) => methods.includes(c.method))) return 'methods';
  if (contracts?.length) {
    for (const call of calls) {
      const queried = contractsOf(call.method, call.params);
      if (queried === null) continue;
      if (queried.length === 0 || !queried.every((a) => contracts.includes(a))) return 'contracts';
    }
  }
  return null;
}

/** The ports an origin of these schemes has when it names none (WHATWG URL's special schemes). */
const DEFAULT_PORTS: Readonly<Record<string, string>> = { http: '80', https: '443', ws: '80', wss: '443' };

/** An Origin header's parts, lower-case; `port` is the one in effect (the scheme's default if none is written). */
export interface OriginParts {
  scheme: string;
  hostname: string;
  port: string | null;
}

/**
 * An Origin header as scheme, host and port, or null when it is not one. The header's grammar
 * (RFC 6454 serialized-origin) is `scheme "://" host [ ":" port ]` and nothing else: no user info,
 * path, query or fragment. WHATWG URL parses it (hosts, IPv6 literals, ports, percent escapes, as a
 * browser does), and the text must be exactly what the parsed origin writes back (an explicit
 * default port aside), so anything URL would have read past or rewritten is refused rather than
 * matched on a part of it: `https://evil.com#.example.com` is evil.com with a fragment, not a
 * subdomain of example.com. `null` (an opaque origin) is not one.
 */
export function parseOrigin(text: string): OriginParts | null {
  const lower = text.toLowerCase();
  let url: URL;
  try {
    url = new URL(lower);
  } catch {
    return null;
  }
  const scheme = url.protocol.slice(0, -1);
  const written = `${url.protocol}//${url.host}`;
  const defaultPort = DEFAULT_PORTS[scheme];
  if (
    url.host === '' ||
    (lower !== written && (defaultPort === undefined || lower !== `${written}:${defaultPort}`))
  )
    return null;
  return { scheme, hostname: url.hostname, port: url.port === '' ? (defaultPort ?? null) : url.port };
}

/**
 * Infura's origin matching: an entry's scheme, when it has one, must match; `*.example.com` matches
 * every subdomain of example.com (at any depth, whole labels, not example.com itself); an entry
 * without a port matches any port; a scheme alone (`https://`) matches every origin of that scheme. A
 * request without an Origin, with the opaque `null`, or with anything that is not an origin
 * (parseOrigin) matches nothing.
 */
export function originAllowed(entries: readonly string[], origin: string | undefined): boolean {
  const parts = origin === undefined ? null : parseOrigin(origin);
  if (!parts) return false;
  return entries.some((entry) => {
    const at = entry.indexOf('://');
    const entryScheme = at < 0 ? null : entry.slice(0, at);
    const pattern = at < 0 ? entry : entry.slice(at + 3);
    if (entryScheme !== null && entryScheme !== parts.scheme) return false;
    if (pattern === '') return true;
    const portAt = pattern.search(/:[0-9]+$/);
    const host = portAt < 0 ? pattern : pattern.slice(0, portAt);
    if (portAt >= 0 && pattern.slice(portAt + 1) !== parts.port) return false;
    if (!host.startsWith('*.')) return parts.hostname === host;
    const suffix = host.slice(1);
    if (!parts.hostname.endsWith(suffix)) return false;
    // What the wildcard stands for is one label or more, each with something in it.
    const labels = parts.hostname.slice(0, -suffix.length);
    return labels !== '' && labels.split('.').every((label) => label !== '');
  });
}

/** A one-line description of the settings, for `keys list` and `keys show`. */
export function describeLimits(settings: KeySettings | undefined): string {
  const parts: string[] = [];
  if (settings?.creditsPerSecond !== undefined)
    parts.push(
      `${settings.creditsPerSecond} credits/s (burst ${settings.burst ?? settings.creditsPerSecond})`,
    );
  if (settings?.creditsPerDay !== undefined) parts.push(`${settings.creditsPerDay} credits/day`);
  return parts.length === 0 ? 'unlimited' : parts.join(', ');
}

import { readFileSync } from 'node:fs';

/**
 * The package's version, read once from package.json: beside src/ in a checkout, and beside the
 * build's src/ in dist/<key>/, where bin/build.mjs copies it.
 */
export const VERSION: string = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
).version;

/** What web3_clientVersion answers. */
export const CLIENT_VERSION = `ethtrace/v${VERSION}`;

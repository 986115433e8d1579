import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import solc from 'solc';
import type { Abi, Hex } from 'viem';
import { ROOT } from './process.ts';

/**
 * Compiles a Solidity file of bench/contracts with the solc devDependency, once per content: the
 * output is cached under .tmp/ by the hash of the source, the compiler version and the settings
 * (a compile takes about a second, a cache hit nothing).
 */

export interface Compiled {
  abi: Abi;
  bytecode: Hex;
}

/** The EVM the contracts are compiled for: what every chain the benchmark builds runs, or newer. */
const EVM_VERSION = 'prague';

export function compileContracts(path: string): Record<string, Compiled> {
  const source = readFileSync(path, 'utf8');
  const name = basename(path);
  const settings = {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: EVM_VERSION,
    outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
  };
  const key = createHash('sha256')
    .update(solc.version())
    .update(JSON.stringify(settings))
    .update(source)
    .digest('hex')
    .slice(0, 16);
  const cacheDir = join(ROOT, '.tmp', 'solc');
  const cachePath = join(cacheDir, `${name}.${key}.json`);
  try {
    return JSON.parse(readFileSync(cachePath, 'utf8')) as Record<string, Compiled>;
  } catch {
    // Not compiled yet (or a damaged cache file): compile below.
  }
  const input = { language: 'Solidity', sources: { [name]: { content: source } }, settings };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: Array<{ severity: string; formattedMessage: string }>;
    contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const problems = (output.errors ?? []).map((e) => e.formattedMessage);
  // Warnings fail too: the contracts are ours, so there is no reason to carry one.
  if (problems.length > 0) throw new Error(`solc ${name}:\n${problems.join('\n')}`);
  const compiled: Record<string, Compiled> = {};
  for (const [contract, out] of Object.entries(output.contracts?.[name] ?? {})) {
    compiled[contract] = { abi: out.abi, bytecode: `0x${out.evm.bytecode.object}` };
  }
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(cachePath, JSON.stringify(compiled));
  return compiled;
}

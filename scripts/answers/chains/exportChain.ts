/*
 * Copied from test/support/exportChain.ts for scripts/answers: it imports anvil.ts (and through it src/); importFromAnvil left out. The answers tool must not load
 * src/ (the code it compares), so it carries its own copy; keep it in step with the original.
 */
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createMPT } from '@ethereumjs/mpt';
import { type Input, RLP } from '@ethereumjs/rlp';
import { bigIntToUnpaddedBytes, bytesToHex, hexToBytes } from '@ethereumjs/util';
import { type Hex, hexToBigInt, keccak256, numberToHex } from 'viem';
import type { RpcBlock, RpcTransaction, RpcWithdrawal } from '../../../test/support/rpcTypes.ts';
import type { Anvil } from './anvil.ts';

/**
 * Exports anvil's chain the way `geth export` does: `chain.rlp` holds every block, genesis
 * included, as consensus RLP, concatenated. anvil has no raw-block method, so each block is
 * rebuilt from its JSON and the raw transactions; the rebuilt header must hash to anvil's block
 * hash and the transactions must give anvil's transactions root, which proves the file is the
 * chain anvil ran and not an approximation of it.
 *
 * Block 0 is anvil's own genesis header: its state root is the empty-trie root whatever the
 * alloc, so an importer cannot recompute it from genesis.json and must take it from here.
 */

export interface ExportedChain {
  genesisPath: string;
  rlpPath: string;
  /** Blocks written, genesis included (latest block number + 1). */
  blocks: number;
  headHash: Hex;
}

type Kind = 'data' | 'quantity';

/** Header fields in consensus order: the first 15 always, each later one from its fork on. */
export const HEADER_FIELDS: readonly (readonly [string, Kind])[] = [
  ['parentHash', 'data'],
  ['sha3Uncles', 'data'],
  ['miner', 'data'],
  ['stateRoot', 'data'],
  ['transactionsRoot', 'data'],
  ['receiptsRoot', 'data'],
  ['logsBloom', 'data'],
  ['difficulty', 'quantity'],
  ['number', 'quantity'],
  ['gasLimit', 'quantity'],
  ['gasUsed', 'quantity'],
  ['timestamp', 'quantity'],
  ['extraData', 'data'],
  ['mixHash', 'data'],
  ['nonce', 'data'],
  ['baseFeePerGas', 'quantity'],
  ['withdrawalsRoot', 'data'],
  ['blobGasUsed', 'quantity'],
  ['excessBlobGas', 'quantity'],
  ['parentBeaconBlockRoot', 'data'],
  ['requestsHash', 'data'],
];
const MANDATORY_HEADER_FIELDS = 15;

export async function exportChain(anvil: Anvil, outDir: string): Promise<ExportedChain> {
  await mkdir(outDir, { recursive: true });
  const latest = hexToBigInt(await anvil.rpc<Hex>('eth_blockNumber'));
  const encoded: Uint8Array[] = [];
  let parentHash: Hex | undefined;
  for (let n = 0n; n <= latest; n++) {
    const block = await anvil.rpc<RpcBlock | null>('eth_getBlockByNumber', [numberToHex(n), true]);
    if (block === null) throw new Error(`anvil has no block ${n} though its head is ${latest}`);
    if (parentHash !== undefined && block.parentHash !== parentHash) {
      throw new Error(
        `block ${n}: parentHash ${block.parentHash} is not block ${n - 1n}'s hash ${parentHash}`,
      );
    }
    encoded.push(await encodeBlock(anvil, block));
    parentHash = block.hash;
  }
  const genesisPath = join(outDir, 'genesis.json');
  const rlpPath = join(outDir, 'chain.rlp');
  await copyFile(anvil.genesisPath, genesisPath);
  await writeFile(rlpPath, Buffer.concat(encoded));
  return { genesisPath, rlpPath, blocks: encoded.length, headHash: parentHash as Hex };
}

/** Consensus RLP of one block, after checking it against every hash anvil committed to. */
async function encodeBlock(anvil: Anvil, block: RpcBlock): Promise<Uint8Array> {
  const where = `block ${hexToBigInt(block.number)}`;
  if (block.uncles.length > 0) throw new Error(`${where}: has uncles, which anvil never makes`);
  const header = headerFields(block, where);
  const headerHash = keccak256(RLP.encode(header));
  if (headerHash !== block.hash) {
    throw new Error(`${where}: rebuilt header hashes to ${headerHash}, anvil says ${block.hash}`);
  }
  const rawTxs = await Promise.all(block.transactions.map((tx) => rawTransaction(anvil, tx, where)));
  await expectRoot(`${where} transactionsRoot`, rawTxs, block.transactionsRoot);
  const body: Input[] = [header, rawTxs.map(bodyTransaction), []];
  if (block.withdrawals !== undefined) {
    const withdrawals = block.withdrawals.map(withdrawalFields);
    await expectRoot(
      `${where} withdrawalsRoot`,
      withdrawals.map((w) => RLP.encode(w)),
      block.withdrawalsRoot,
    );
    body.push(withdrawals);
  }
  return RLP.encode(body);
}

/** The header as an RLP list, stopping at the first absent optional field as the fork rules do. */
function headerFields(block: RpcBlock, where: string): Uint8Array[] {
  const fields: Uint8Array[] = [];
  for (const [i, [name, kind]] of HEADER_FIELDS.entries()) {
    const value = block[name];
    if (value === undefined) {
      if (i < MANDATORY_HEADER_FIELDS) throw new Error(`${where}: header lacks ${name}`);
      const later = HEADER_FIELDS.slice(i + 1).find(([next]) => block[next] !== undefined);
      if (later !== undefined) throw new Error(`${where}: header has ${later[0]} but not ${name}`);
      break;
    }
    if (typeof value !== 'string') throw new Error(`${where}: header ${name} is not hex: ${String(value)}`);
    fields.push(encodeField(value as Hex, kind));
  }
  return fields;
}

function encodeField(value: Hex, kind: Kind): Uint8Array {
  return kind === 'quantity' ? bigIntToUnpaddedBytes(hexToBigInt(value)) : hexToBytes(value);
}

async function rawTransaction(anvil: Anvil, tx: RpcTransaction, where: string): Promise<Uint8Array> {
  const raw = await anvil.rpc<Hex | null>('eth_getRawTransactionByHash', [tx.hash]);
  if (raw === null) throw new Error(`${where}: anvil has no raw transaction ${tx.hash}`);
  if (keccak256(raw) !== tx.hash) throw new Error(`${where}: raw transaction does not hash to ${tx.hash}`);
  return hexToBytes(raw);
}

/**
 * In a block body a legacy transaction is its RLP list itself, a typed one (EIP-2718) the byte
 * string `type ‖ payload`. A legacy encoding starts with a list prefix (≥ 0xc0), a type byte never does.
 */
function bodyTransaction(raw: Uint8Array): Input {
  return (raw[0] ?? 0) >= 0xc0 ? RLP.decode(raw) : raw;
}

function withdrawalFields(w: RpcWithdrawal): Uint8Array[] {
  return [
    encodeField(w.index, 'quantity'),
    encodeField(w.validatorIndex, 'quantity'),
    encodeField(w.address, 'data'),
    encodeField(w.amount, 'quantity'),
  ];
}

/** Root of the trie mapping rlp(index) to each item, as for transactions, receipts and withdrawals. */
async function expectRoot(what: string, items: readonly Uint8Array[], want: Hex | undefined): Promise<void> {
  const trie = await createMPT();
  for (const [i, item] of items.entries()) await trie.put(RLP.encode(i), item);
  const got = bytesToHex(trie.root());
  if (got !== want) throw new Error(`${what}: computed ${got}, anvil says ${String(want)}`);
}

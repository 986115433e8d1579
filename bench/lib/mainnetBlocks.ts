import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type Abi,
  type Address,
  encodeDeployData,
  encodeFunctionData,
  getAddress,
  type Hex,
  maxUint256,
  parseEther,
  toHex,
} from 'viem';
import { type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { keccak256, stringToHex } from 'viem/utils';
import {
  type Anvil,
  type MinedBlock,
  mineBlock,
  startAnvil,
  type TxOutcome,
} from '../../test/support/anvil.ts';
import { devAccount } from '../../test/support/devAccounts.ts';
import { buildGenesis } from '../../test/support/genesis.ts';
import { freshAddress, TxFactory, type TxSpec } from '../../test/support/workload.ts';
import { ROOT } from './process.ts';
import { type Compiled, compileContracts } from './solidity.ts';

/**
 * Blocks shaped like mainnet's, built on anvil from the contracts of bench/contracts/Mainnet.sol:
 * token transfers (to known holders and to new ones), swaps routed through one or two
 * constant-product pairs, approvals and transferFrom, NFT mints on a hot counter, call chains up
 * to eight deep, storage-heavy writers, failing transactions (reverts, a failed slippage check,
 * out of gas), EIP-7702 wallets (delegated earlier, and delegating in the block), a contract
 * creation and plain ETH transfers, in legacy (with and without EIP-155), 2930 and 1559
 * envelopes, from well over a hundred senders. The mix is fixed by a seed, so a run rebuilds the
 * same blocks (same hashes) every time.
 */

/** Share of each kind of transaction in a block; the rest of the block is token transfers. */
const MIX = {
  swap: 0.14,
  swapTwoHops: 0.05,
  swapSlippage: 0.01,
  ethTransfer: 0.15,
  approve: 0.05,
  transferFrom: 0.05,
  mint: 0.05,
  hops: 0.05,
  write: 0.06,
  revertTransfer: 0.01,
  outOfGas: 0.015,
  notSelf: 0.005,
  walletBatch: 0.03,
  selfDelegation: 0.015,
  create: 0.005,
} as const;
type Kind = keyof typeof MIX | 'tokenTransfer';

/** Senders funded at genesis; the first WALLETS are delegated to BatchWallet before the measured blocks. */
export const SENDERS = 150;
const WALLETS = 12;
/** Senders kept for type-4 self-delegations, one per block each (anvil's pool queues a second one). */
const DELEGATORS = 24;
const TOKEN_BALANCE = parseEther('1000000');
const PAIR_RESERVE = parseEther('10000000');

const gas = {
  deploy: 3_000_000n,
  ethTransfer: 21_000n,
  token: 90_000n,
  swap: 250_000n,
  swapTwoHops: 350_000n,
  mint: 150_000n,
  hops: 500_000n,
  writeBase: 60_000n,
  writePerSlot: 23_000n,
  outOfGas: 90_000n,
  wallet: 400_000n,
  mintMany: 8_000_000n,
} as const;

export interface MainnetBlock extends MinedBlock {
  gasUsed: bigint;
  senders: number;
  failed: number;
  kinds: Record<string, number>;
}

export interface MainnetChain {
  anvil: Anvil;
  blocks: MainnetBlock[];
}

interface Contracts {
  tokens: [Address, Address, Address];
  pairAB: Address;
  pairBC: Address;
  router: Address;
  collectible: Address;
  hops: Address[];
  ledger: Address;
  wallet: Address;
}

/** A deterministic PRNG (mulberry32): the same seed gives the same blocks. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let senderAccounts: PrivateKeyAccount[] | undefined;
export function senders(): PrivateKeyAccount[] {
  senderAccounts ??= Array.from({ length: SENDERS }, (_, i) =>
    privateKeyToAccount(keccak256(stringToHex(`ethtrace mainnet-like sender ${i}`))),
  );
  return senderAccounts;
}

/** anvil on a genesis that funds the senders, with the contracts deployed and set up. */
export async function buildMainnetChain(
  workDir: string,
  opts: { blocks: number; txsPerBlock: number; log?: (line: string) => void },
): Promise<MainnetChain> {
  const genesis = buildGenesis({
    alloc: Object.fromEntries(senders().map((s) => [s.address, { balance: toHex(parseEther('100')) }])),
  });
  const genesisPath = join(workDir, 'mainnet-genesis.json');
  await writeFile(genesisPath, `${JSON.stringify(genesis, null, 2)}\n`);
  const anvil = await startAnvil({ genesisPath });
  try {
    const compiled = compileContracts(join(ROOT, 'bench', 'contracts', 'Mainnet.sol'));
    const f = new TxFactory(anvil);
    const contracts = await setUp(anvil, f, compiled);
    const blocks: MainnetBlock[] = [];
    const delegators = senders().slice(SENDERS - DELEGATORS);
    for (let b = 0; b < opts.blocks; b++) {
      const block = await mineMainnetBlock(anvil, f, compiled, contracts, b, opts.txsPerBlock, delegators);
      opts.log?.(
        `anvil block ${block.number}: ${block.receipts.length} txs, ${(Number(block.gasUsed) / 1e6).toFixed(1)} Mgas, ` +
          `${block.senders} senders, ${block.failed} failed`,
      );
      blocks.push(block);
    }
    return { anvil, blocks };
  } catch (e) {
    await anvil.stop();
    throw e;
  }
}

function abiOf(compiled: Record<string, Compiled>, name: string): Compiled {
  const c = compiled[name];
  if (!c) throw new Error(`Mainnet.sol has no contract ${name}`);
  return c;
}

function call(c: Compiled, functionName: string, args: readonly unknown[] = []): Hex {
  return encodeFunctionData({ abi: c.abi as Abi, functionName, args } as Parameters<
    typeof encodeFunctionData
  >[0]);
}

async function mineOk(anvil: Anvil, raws: Hex[]): Promise<MinedBlock> {
  return mineBlock(anvil, raws);
}

function created(block: MinedBlock, index: number): Address {
  const address = block.receipts[index]?.contractAddress;
  if (!address) throw new Error(`transaction ${index} of block ${block.number} created no contract`);
  return getAddress(address);
}

/** Deployments, liquidity, balances, approvals and the delegated wallets, in a few blocks. */
async function setUp(anvil: Anvil, f: TxFactory, compiled: Record<string, Compiled>): Promise<Contracts> {
  const deployer = devAccount(0);
  const deploy = (name: string, args: readonly unknown[] = []) => {
    const c = abiOf(compiled, name);
    const data = encodeDeployData({ abi: c.abi, bytecode: c.bytecode, args } as Parameters<
      typeof encodeDeployData
    >[0]);
    return f.sign({ type: 'eip1559', from: deployer, data, gas: gas.deploy });
  };
  const first = await mineOk(anvil, [
    await deploy('Token', ['Alpha']),
    await deploy('Token', ['Bravo']),
    await deploy('Token', ['Charlie']),
    await deploy('Router'),
    await deploy('Collectible'),
    await deploy('Hop'),
    await deploy('Hop'),
    await deploy('Hop'),
    await deploy('Hop'),
    await deploy('Ledger'),
    await deploy('BatchWallet'),
  ]);
  const tokens: [Address, Address, Address] = [created(first, 0), created(first, 1), created(first, 2)];
  const second = await mineOk(anvil, [
    await deploy('Pair', [tokens[0], tokens[1]]),
    await deploy('Pair', [tokens[1], tokens[2]]),
  ]);
  const contracts: Contracts = {
    tokens,
    router: created(first, 3),
    collectible: created(first, 4),
    hops: [5, 6, 7, 8].map((i) => created(first, i)),
    ledger: created(first, 9),
    wallet: created(first, 10),
    pairAB: created(second, 0),
    pairBC: created(second, 1),
  };
  const token = abiOf(compiled, 'Token');
  const pair = abiOf(compiled, 'Pair');
  const all = senders().map((s) => s.address);
  const liquidity: Hex[] = [];
  for (const t of tokens) {
    liquidity.push(
      await f.sign({
        type: 'eip1559',
        from: deployer,
        to: t,
        data: call(token, 'mintMany', [all, TOKEN_BALANCE]),
        gas: gas.mintMany,
      }),
    );
  }
  for (const [p, [t0, t1]] of [
    [contracts.pairAB, [tokens[0], tokens[1]]],
    [contracts.pairBC, [tokens[1], tokens[2]]],
  ] as const) {
    for (const t of [t0, t1]) {
      liquidity.push(
        await f.sign({
          type: 'eip1559',
          from: deployer,
          to: t,
          data: call(token, 'mintMany', [[p], PAIR_RESERVE]),
          gas: gas.token,
        }),
      );
    }
    liquidity.push(
      await f.sign({ type: 'eip1559', from: deployer, to: p, data: call(pair, 'sync'), gas: gas.swap }),
    );
  }
  await mineOk(anvil, liquidity);
  // Every sender lets the router spend its Alpha and Bravo, and its neighbour spend its Charlie.
  const approvals: Hex[] = [];
  for (const [i, s] of senders().entries()) {
    const neighbour = senders()[(i + 1) % SENDERS] as PrivateKeyAccount;
    for (const [t, spender] of [
      [tokens[0], contracts.router],
      [tokens[1], contracts.router],
      [tokens[2], neighbour.address],
    ] as const) {
      approvals.push(
        await f.sign({
          type: 'eip1559',
          from: s,
          to: t,
          data: call(token, 'approve', [spender, maxUint256]),
          gas: gas.token,
        }),
      );
    }
  }
  await mineOk(anvil, approvals.slice(0, approvals.length / 2));
  await mineOk(anvil, approvals.slice(approvals.length / 2));
  // The wallets' delegations, paid for by a relayer: a plain transfer carrying the authorizations.
  await mineOk(anvil, [
    await f.sign({
      type: 'eip7702',
      from: devAccount(9),
      to: freshAddress('mainnet/relayer'),
      gas: 25_000n * BigInt(WALLETS) + 50_000n,
      delegations: senders()
        .slice(0, WALLETS)
        .map((authority) => ({ authority, contract: contracts.wallet })),
    }),
  ]);
  return contracts;
}

interface Planned {
  kind: Kind;
  sender: PrivateKeyAccount;
  spec: (envelope: Envelope) => TxSpec;
  expect: TxOutcome;
}

type Envelope = { type: 'legacy'; eip155: boolean } | { type: 'eip2930' } | { type: 'eip1559' };

/** One measured block: the mix planned, shuffled, signed in block order and mined. */
async function mineMainnetBlock(
  anvil: Anvil,
  f: TxFactory,
  compiled: Record<string, Compiled>,
  c: Contracts,
  blockIndex: number,
  txs: number,
  delegatorsLeft: PrivateKeyAccount[],
): Promise<MainnetBlock> {
  const rand = random(0x5eed + blockIndex);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)] as T;
  const token = abiOf(compiled, 'Token');
  const router = abiOf(compiled, 'Router');
  const collectible = abiOf(compiled, 'Collectible');
  const hop = abiOf(compiled, 'Hop');
  const ledger = abiOf(compiled, 'Ledger');
  const wallet = abiOf(compiled, 'BatchWallet');
  const all = senders();
  const ordinary = all.slice(WALLETS, SENDERS - DELEGATORS);
  const wallets = all.slice(0, WALLETS);
  let fresh = 0;
  const freshTo = () => freshAddress(`mainnet/${blockIndex}/${fresh++}`);
  const amount = () => parseEther(String(1 + Math.floor(rand() * 999)));
  // Recipients: half existing holders, half new accounts, as on mainnet. Not the wallets nor the
  // delegators: ETH sent to a delegated account runs BatchWallet, which takes none.
  const recipient = () => (rand() < 0.5 ? pick(ordinary).address : freshTo());
  const batch = (calls: Array<{ to: Address; value?: bigint; data: Hex }>) =>
    call(wallet, 'execute', [calls.map((x) => ({ to: x.to, value: x.value ?? 0n, data: x.data }))]);
  const to =
    (target: Address, data: Hex, gasLimit: bigint, value?: bigint) =>
    (e: Envelope, from: PrivateKeyAccount): TxSpec => {
      const base = { from, to: target, data, gas: gasLimit, ...(value === undefined ? {} : { value }) };
      if (e.type === 'eip2930')
        return { ...base, type: 'eip2930', accessList: [{ address: target, storageKeys: [] }] };
      return { ...base, ...e };
    };
  const swapData = (path: Address[], tokenIn: Address, minOut: bigint, receiver: Address) =>
    call(router, 'swapExactIn', [amount(), minOut, path, tokenIn, receiver]);

  const counts = new Map<Kind, number>();
  let planned = 0;
  for (const [kind, share] of Object.entries(MIX) as Array<[Kind, number]>) {
    const n = Math.max(1, Math.round(share * txs));
    counts.set(kind, n);
    planned += n;
  }
  counts.set('tokenTransfer', Math.max(1, txs - planned));

  const plans: Planned[] = [];
  const plan = (
    kind: Kind,
    sender: PrivateKeyAccount,
    build: (e: Envelope, from: PrivateKeyAccount) => TxSpec,
    expect: TxOutcome = 'success',
  ) => plans.push({ kind, sender, spec: (e) => build(e, sender), expect });
  for (const [kind, n] of counts) {
    for (let i = 0; i < n; i++) {
      const s = pick(ordinary);
      const sIndex = all.indexOf(s);
      switch (kind) {
        case 'tokenTransfer':
          plan(kind, s, to(pick(c.tokens), call(token, 'transfer', [recipient(), amount()]), gas.token));
          break;
        case 'swap': {
          const [path, tokenIn] = rand() < 0.5 ? [c.pairAB, c.tokens[0]] : [c.pairAB, c.tokens[1]];
          plan(kind, s, to(c.router, swapData([path], tokenIn, 0n, s.address), gas.swap));
          break;
        }
        case 'swapTwoHops':
          plan(
            kind,
            s,
            to(c.router, swapData([c.pairAB, c.pairBC], c.tokens[0], 0n, recipient()), gas.swapTwoHops),
          );
          break;
        case 'swapSlippage':
          plan(
            kind,
            s,
            to(c.router, swapData([c.pairAB], c.tokens[1], maxUint256, s.address), gas.swap),
            'reverted',
          );
          break;
        case 'ethTransfer':
          plan(kind, s, (e, from) => {
            const target = recipient();
            const base = {
              from,
              to: target,
              value: parseEther('0.01') * BigInt(1 + Math.floor(rand() * 100)),
            };
            return e.type === 'eip2930'
              ? { ...base, type: 'eip2930', accessList: [], gas: gas.ethTransfer }
              : { ...base, ...e, gas: gas.ethTransfer };
          });
          break;
        case 'approve':
          plan(kind, s, to(pick(c.tokens), call(token, 'approve', [freshTo(), amount()]), gas.token));
          break;
        case 'transferFrom': {
          const owner = all[(sIndex + SENDERS - 1) % SENDERS] as PrivateKeyAccount;
          plan(
            kind,
            s,
            to(c.tokens[2], call(token, 'transferFrom', [owner.address, recipient(), amount()]), gas.token),
          );
          break;
        }
        case 'mint':
          plan(kind, s, to(c.collectible, call(collectible, 'mint'), gas.mint, parseEther('0.01')));
          break;
        case 'hops': {
          const depth = 3 + Math.floor(rand() * 6);
          const chain = Array.from({ length: depth }, () => pick(c.hops));
          const [head, ...rest] = chain as [Address, ...Address[]];
          // Most keys are the sender's own; a few land on shared counters.
          const key =
            rand() < 0.8 ? BigInt(sIndex) * 1000n + BigInt(blockIndex * 10) : BigInt(Math.floor(rand() * 4));
          plan(kind, s, to(head, call(hop, 'hop', [rest, key]), gas.hops));
          break;
        }
        case 'write': {
          const slots = 3 + Math.floor(rand() * 8);
          const start = BigInt(Math.floor(rand() * 2 ** 40));
          plan(
            kind,
            s,
            to(
              c.ledger,
              call(ledger, 'write', [start, BigInt(slots), BigInt(i + 1)]),
              gas.writeBase + gas.writePerSlot * BigInt(slots),
            ),
          );
          break;
        }
        case 'revertTransfer':
          plan(
            kind,
            s,
            to(pick(c.tokens), call(token, 'transfer', [recipient(), TOKEN_BALANCE * 1000n]), gas.token),
            'reverted',
          );
          break;
        case 'outOfGas':
          plan(kind, s, to(c.ledger, call(ledger, 'spin'), gas.outOfGas), 'reverted');
          break;
        case 'notSelf':
          plan(kind, s, to(pick(wallets).address, batch([]), gas.wallet), 'reverted');
          break;
        case 'walletBatch': {
          const w = pick(wallets);
          const data = batch([
            { to: c.tokens[0], data: call(token, 'transfer', [recipient(), amount()]) },
            { to: c.tokens[1], data: call(token, 'transfer', [recipient(), amount()]) },
            { to: c.collectible, value: parseEther('0.01'), data: call(collectible, 'mint') },
          ]);
          plan(kind, w, to(w.address, data, gas.wallet));
          break;
        }
        case 'selfDelegation': {
          const d = delegatorsLeft.shift();
          if (!d) throw new Error('no delegator left for this block: fewer blocks or more DELEGATORS');
          const data = batch([
            { to: c.tokens[2], data: call(token, 'approve', [c.router, maxUint256]) },
            { to: c.router, data: swapData([c.pairBC], c.tokens[2], 0n, d.address) },
          ]);
          plans.push({
            kind,
            sender: d,
            expect: 'success',
            spec: () => ({
              type: 'eip7702',
              from: d,
              to: d.address,
              data,
              gas: gas.wallet,
              delegations: [{ authority: d, contract: c.wallet }],
            }),
          });
          break;
        }
        case 'create': {
          const data = encodeDeployData({ abi: hop.abi, bytecode: hop.bytecode } as Parameters<
            typeof encodeDeployData
          >[0]);
          plan(
            kind,
            s,
            (e, from) =>
              ({
                ...(e.type === 'eip2930' ? { type: 'eip2930', accessList: [] } : e),
                from,
                data,
                gas: gas.deploy,
              }) as TxSpec,
          );
          break;
        }
      }
    }
  }
  // Fisher–Yates with the block's PRNG: kinds interleave, a sender's transactions keep their order
  // because nonces are taken in signing order below.
  for (let i = plans.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [plans[i], plans[j]] = [plans[j] as Planned, plans[i] as Planned];
  }
  const raws: Hex[] = [];
  for (const p of plans) {
    const r = rand();
    const envelope: Envelope =
      r < 0.6 ? { type: 'eip1559' } : r < 0.75 ? { type: 'eip2930' } : { type: 'legacy', eip155: r < 0.97 };
    raws.push(await f.sign(p.spec(envelope)));
  }
  const mined = await mineBlock(anvil, raws, { expect: plans.map((p) => p.expect) });
  const header = await anvil.rpc<{ gasUsed: Hex }>('eth_getBlockByNumber', [toHex(mined.number), false]);
  const kinds: Record<string, number> = {};
  for (const p of plans) kinds[p.kind] = (kinds[p.kind] ?? 0) + 1;
  return {
    ...mined,
    gasUsed: BigInt(header.gasUsed),
    senders: new Set(plans.map((p) => p.sender.address)).size,
    failed: plans.filter((p) => p.expect === 'reverted').length,
    kinds,
  };
}

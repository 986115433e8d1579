import { createTxFromRLP, type TypedTransaction } from '@ethereumjs/tx';
import { bytesToHex, generateAddress, hexToBytes } from '@ethereumjs/util';
import { Forks } from '../../src/chain/forks.ts';
import { type ChainSpec, parseChainSpec } from '../../src/chain/genesis.ts';
import { ChainWriter } from '../../src/ingest/chainWriter.ts';
import { mineBlock } from '../../src/ingest/devMiner.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { devAccount } from './devAccounts.ts';
import { type ImportEngine, importEngine } from './ethereumjsOracle/importEngine.ts';

// A chain with a DAO fork block (the conformance chain has none): Homestead from genesis, the DAO
// fork at block 2 with daoForkSupport, and transactions around it that pay the DAO and read the
// refund contract's balance.

/** TheDAO, its extraBalance account and its first child DAO: three accounts the fork drains. */
export const DAO = '0xbb9bc244d798123fde783fcc1c72d3bb8c189413';
export const DAO_EXTRA_BALANCE = '0x807640a13483f8ac783c557fcdf27be11ea4ac7a';
export const CHILD_DAO = '0xd4fe7bc31cedb7bfb8a345f31e668033056b2728';
/** The WithdrawDAO contract the drained balances go to. */
export const DAO_REFUND = '0xbf4ed7b27f1d666546e30d74d50d173d20bca754';
export const DAO_FORK_BLOCK = 2n;

export function daoSpec(): ChainSpec {
  return parseChainSpec(
    {
      config: {
        chainId: 1337,
        homesteadBlock: 0,
        daoForkBlock: Number(DAO_FORK_BLOCK),
        daoForkSupport: true,
      },
      nonce: '0x0',
      mixHash: `0x${'00'.repeat(32)}`,
      coinbase: `0x${'00'.repeat(20)}`,
      difficulty: '0x20000',
      gasLimit: '0x1c9c380',
      timestamp: '0x0',
      extraData: '0x',
      alloc: {
        [DAO]: { balance: '0x3e8' },
        [DAO_EXTRA_BALANCE]: { balance: '0x7' },
        [CHILD_DAO]: { balance: '0x5' },
        [devAccount(1).address]: { balance: '0xde0b6b3a7640000' },
      },
    },
    'dao genesis',
  );
}

// Stores BALANCE(refund contract) in slot 0 when called; the initcode returns that runtime.
const RUNTIME = `73${DAO_REFUND.slice(2)}3160005500`;
const INITCODE = `0x601a600c600039601a6000f3${RUNTIME}`;

/** The contract block 1 deploys, which the DAO fork block calls. */
export const BALANCE_READER = bytesToHex(
  generateAddress(hexToBytes(devAccount(1).address), new Uint8Array()),
);

/**
 * Mines blocks 1–3 of the DAO chain into `datadir` with `engine`: block 1 deploys the balance reader
 * and pays the DAO 1 wei; block 2 (the fork) calls the reader and pays the DAO again; block 3 calls
 * the reader and pays the child DAO. Returns the blocks' hashes.
 */
export async function mineDaoChain(engine: ImportEngine, datadir: string): Promise<string[]> {
  const spec = daoSpec();
  const sender = devAccount(1);
  const store = await openLmdbStore(datadir);
  try {
    const writer = await ChainWriter.open(store, spec, importEngine(engine));
    await writer.initGenesis();
    const forks = new Forks(spec);
    let nonce = 0;
    const tx = async (n: bigint, fields: { to?: string; value?: bigint; data?: string; gas: bigint }) => {
      const raw = await sender.signTransaction({
        type: 'legacy',
        nonce: nonce++,
        gas: fields.gas,
        ...(fields.to ? { to: fields.to as `0x${string}` } : {}),
        value: fields.value ?? 0n,
        ...(fields.data ? { data: fields.data as `0x${string}` } : {}),
        gasPrice: 1_000_000_000n,
      });
      return createTxFromRLP(hexToBytes(raw), { common: forks.commonAt(n, 12n * n) });
    };
    const blocks: Array<(n: bigint) => Promise<TypedTransaction[]>> = [
      async (n) => [
        await tx(n, { data: INITCODE, gas: 200_000n }),
        await tx(n, { to: DAO, value: 1n, gas: 21_000n }),
      ],
      async (n) => [
        await tx(n, { to: BALANCE_READER, gas: 100_000n }),
        await tx(n, { to: DAO, value: 1n, gas: 21_000n }),
      ],
      async (n) => [
        await tx(n, { to: BALANCE_READER, gas: 100_000n }),
        await tx(n, { to: CHILD_DAO, value: 3n, gas: 21_000n }),
      ],
    ];
    const hashes: string[] = [];
    for (const [i, make] of blocks.entries()) {
      const n = BigInt(i + 1);
      hashes.push(bytesToHex((await mineBlock(writer, await make(n), 12n * n)).hash()));
    }
    return hashes;
  } finally {
    await store.close();
  }
}

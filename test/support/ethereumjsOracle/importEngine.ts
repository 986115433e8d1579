import type { Block } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { Account, Address } from '@ethereumjs/util';
import { createVM, runBlock, type VM } from '@ethereumjs/vm';
import { canonicalBlockHashes } from '../../../src/chain/blockHashes.ts';
import type { ChainSpec } from '../../../src/chain/genesis.ts';
import {
  type Engine,
  type EngineOpener,
  type HeadStateView,
  openEvmEngine,
} from '../../../src/ingest/engines.ts';
import type { ExecutedBlock, StateWrite } from '../../../src/ingest/evmExecution.ts';
import type { ChainStore } from '../../../src/store/types.ts';
import { RecordingStateManager } from './recordingState.ts';
import { BufferedTrieDb } from './trieDb.ts';

// Import on @ethereumjs/vm, as the service ran it before src/evm: the oracle that
// test/ingest/evmImport.test.ts compares every stored table with.

/** Opens @ethereumjs/vm's runBlock on a MerkleStateManager over the store, for ChainWriter.open. */
export const openEthereumjsEngine: EngineOpener = (store, _spec, common) =>
  EthereumjsEngine.open(store, common);

class EthereumjsEngine implements Engine {
  // Its trie reads the nodes of earlier blocks from the store.
  readonly keepsUnstoredState = false;

  private constructor(
    private readonly vm: VM,
    private readonly state: RecordingStateManager,
    private readonly trieDb: BufferedTrieDb,
  ) {}

  static async open(store: ChainStore, common: Common): Promise<EthereumjsEngine> {
    const trieDb = new BufferedTrieDb(store);
    const trie = new MerklePatriciaTrie({ db: trieDb, useKeyHashing: true, common, cacheSize: 50_000 });
    const state = new RecordingStateManager({ common, trie });
    const vm = await createVM({ common, stateManager: state, blockchain: canonicalBlockHashes(store) });
    return new EthereumjsEngine(vm, state, trieDb);
  }

  get view(): HeadStateView {
    return this.state;
  }

  async setRoot(root: Uint8Array): Promise<void> {
    this.trieDb.discardPending();
    this.state.forgetChanges();
    await this.state.setStateRoot(root);
  }

  async genesisState(spec: ChainSpec): Promise<Uint8Array> {
    for (const a of spec.alloc) {
      const address = new Address(a.address);
      await this.state.putAccount(address, new Account(a.nonce, a.balance));
      if (a.code.length > 0) await this.state.putCode(address, a.code);
      for (const [slot, value] of a.storage) await this.state.putStorage(address, slot, value);
    }
    return this.state.getStateRoot();
  }

  async execute(block: Block): Promise<ExecutedBlock> {
    const result = await runBlock(this.vm, {
      block,
      generate: true,
      skipHeaderValidation: true,
      skipBlockValidation: true,
      setHardfork: false,
      clearCache: false,
    });
    return {
      stateRoot: result.stateRoot,
      gasUsed: result.gasUsed,
      receiptsRoot: result.receiptsRoot,
      logsBloom: result.logsBloom,
      ...(result.requestsHash ? { requestsHash: result.requestsHash } : {}),
      receipts: result.receipts,
    };
  }

  async takeWrite(): Promise<StateWrite> {
    const changes = await this.state.takeChanges();
    const { trieNodes, code } = this.trieDb.takePending();
    return { trieNodes, code, ...changes };
  }

  stored(): void {}

  async discard(root: Uint8Array | null): Promise<void> {
    this.trieDb.discardPending();
    this.state.forgetChanges();
    // runBlock moved the state manager to the failed block's state root.
    if (root) await this.state.setStateRoot(root);
  }
}

/** Which EVM a test imports or mines with: the service's (src/evm) or the oracle. */
export type ImportEngine = 'evm' | 'ethereumjs';

/** The opener ChainWriter.open and importChain take for `engine`. */
export function importEngine(engine: ImportEngine): EngineOpener {
  return engine === 'ethereumjs' ? openEthereumjsEngine : openEvmEngine;
}

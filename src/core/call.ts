/** A call to simulate, in domain terms (parsed from the JSON call object at the RPC edge). */
export interface CallRequest {
  from?: Uint8Array;
  /** Absent or null: contract creation. */
  to?: Uint8Array | null;
  gas?: bigint;
  gasPrice?: bigint;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
  value?: bigint;
  data?: Uint8Array;
  nonce?: bigint;
  type?: number;
  accessList?: Array<{ address: Uint8Array; storageKeys: Uint8Array[] }>;
  authorizationList?: Array<{
    chainId: bigint;
    address: Uint8Array;
    nonce: bigint;
    yParity: bigint;
    r: bigint;
    s: bigint;
  }>;
  blobVersionedHashes?: Uint8Array[];
  maxFeePerBlobGas?: bigint;
}

/** geth's state override for one account, applied before the first call. */
export interface AccountOverride {
  balance?: bigint;
  nonce?: bigint;
  code?: Uint8Array;
  /** Replaces the whole storage. */
  state?: Array<[Uint8Array, Uint8Array]>;
  /** Changes only these slots. */
  stateDiff?: Array<[Uint8Array, Uint8Array]>;
  /** The precompile at this address moves there (geth's override; src/exec/precompileOverrides.ts). */
  movePrecompileToAddress?: Uint8Array;
}

export type StateOverrides = Array<{ address: Uint8Array; override: AccountOverride }>;

/** geth's block overrides: the environment the calls see. */
export interface BlockOverrides {
  number?: bigint;
  time?: bigint;
  gasLimit?: bigint;
  feeRecipient?: Uint8Array;
  prevRandao?: Uint8Array;
  baseFeePerGas?: bigint;
  blobBaseFee?: bigint;
  /** DIFFICULTY before the merge (Erigon's and Reth's bundle overrides). */
  difficulty?: bigint;
  /** What BLOCKHASH answers for these block numbers (Erigon's and Reth's `blockHash` override). */
  blockHashes?: Array<[bigint, Uint8Array]>;
}

export interface TraceTypes {
  trace: boolean;
  stateDiff: boolean;
  vmTrace: boolean;
}

/** A withdrawal a simulated block makes (EIP-4895; the amount in gwei). */
export interface SimulatedWithdrawal {
  index: bigint;
  validatorIndex: bigint;
  address: Uint8Array;
  amount: bigint;
}

/** eth_simulateV1's block overrides: eth_call's, and the beacon root and withdrawals of the block. */
export interface SimulatedBlockOverrides extends BlockOverrides {
  beaconRoot?: Uint8Array;
  withdrawals?: SimulatedWithdrawal[];
}

/** One block of an eth_simulateV1: its overrides, then its calls in order. */
export interface SimulatedBlockCalls {
  blockOverrides?: SimulatedBlockOverrides;
  stateOverrides?: StateOverrides;
  calls: CallRequest[];
}

/** eth_simulateV1's options object. */
export interface SimulateRequest {
  blocks: SimulatedBlockCalls[];
  /** ETH moves shown as ERC-7528 logs. */
  traceTransfers: boolean;
  /** Nonces, fees and balances checked as for a real block (geth's validation mode). */
  validation: boolean;
  returnFullTransactions: boolean;
}

/** One bundle of debug_traceCallMany and eth_callMany: its calls, and the block overrides they see. */
export interface CallBundle {
  calls: CallRequest[];
  blockOverrides?: BlockOverrides;
}

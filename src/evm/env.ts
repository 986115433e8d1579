/** The block a transaction runs in, as its opcodes read it. */
export interface BlockEnv {
  number: bigint;
  timestamp: bigint;
  coinbase: bigint;
  gasLimit: bigint;
  /** DIFFICULTY before the merge. */
  difficulty: bigint;
  /** PREVRANDAO from the merge (EIP-4399); the DIFFICULTY opcode reads it then. */
  prevRandao: bigint;
  /** EIP-1559 base fee (0 before London). */
  baseFee: bigint;
  /** EIP-4844 excess blob gas (0 before Cancun). */
  excessBlobGas: bigint;
  /**
   * The blob base fee when it is not the one `excessBlobGas` gives: a simulated call's (a block
   * override's, or the zero geth gives a blob call that names no blob fee cap).
   */
  blobBaseFee?: bigint;
  chainId: bigint;
  /** Hash of an earlier block (BLOCKHASH asks only for the 256 before this one); 0n when unknown. */
  blockHash(number: bigint): bigint;
}

/** What the running transaction tells its opcodes. */
export interface TxEnv {
  origin: bigint;
  /** The effective gas price (GASPRICE). */
  gasPrice: bigint;
  blobHashes: readonly bigint[];
  /** The blob base fee of the block (BLOBBASEFEE). */
  blobBaseFee: bigint;
}

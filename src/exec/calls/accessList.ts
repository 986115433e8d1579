import type { Common } from '@ethereumjs/common';
import { createTx } from '@ethereumjs/tx';
import { bigIntToBytes, eoaCode7702RecoverAuthority, generateAddress } from '@ethereumjs/util';
import type { CallRequest } from '../../core/call.ts';
import { RequestFailed } from '../../core/errors.ts';
import { Op } from '../../evm/opcodes.ts';
import { bigintWord, bytesKey, toHex } from '../../primitives/hex.ts';
import { keccak256 } from '../../primitives/keccak.ts';
import { simulationCommon } from '../environment.ts';
import { clampGas } from '../message.ts';
import type { SimulatedCall } from '../sessionTypes.ts';
import type { CallContext } from './context.ts';
import { asCallError, usedGas, vmError } from './outcome.ts';

// EIP-7702: the intrinsic gas of one authorization; geth refuses lists longer than the gas pays for.
const PER_AUTH_GAS = 25_000n;
const MAX_UINT64 = (1n << 64n) - 1n;
const ZERO_ADDRESS = new Uint8Array(20);

export interface AccessListEntry {
  address: Uint8Array;
  storageKeys: Uint8Array[];
}

export interface AccessListResult {
  accessList: AccessListEntry[];
  /** Gas the call uses with the list, after refunds. */
  gasUsed: bigint;
  /** The EVM's error when the call fails with the list (geth's words); the list is still served. */
  error?: string;
}

/**
 * geth's eth_createAccessList: the call runs recording the addresses and slots its opcodes touch
 * (less the sender, the recipient, precompiles and authorities), and re-runs with the list found
 * until the list no longer changes.
 */
export async function createAccessList(
  { chain, header, session, limits }: CallContext,
  msg: CallRequest,
): Promise<AccessListResult> {
  const from = msg.from ?? ZERO_ADDRESS;
  const nonce = msg.nonce ?? (await session.account(from)).nonce;
  const gas = clampGas(msg.gas, limits.gasCap);
  const common = chain.commonAt(header.number, header.timestamp);
  const to = msg.to ?? generateAddress(from, bigIntToBytes(nonce));
  const excluded = new Set([bytesKey(from), bytesKey(to), ...session.precompileAddresses().map(bytesKey)]);
  const authorizations = msg.authorizationList ?? [];
  if (BigInt(authorizations.length) > gas / PER_AUTH_GAS)
    throw new RequestFailed('insufficient gas to process all authorizations');
  for (const auth of authorizations) {
    if ((auth.chainId !== 0n && auth.chainId !== chain.chainId) || auth.nonce >= MAX_UINT64) continue;
    const authority = recoverAuthority(auth);
    if (authority) excluded.add(bytesKey(authority));
  }
  // Before Berlin a call has no access list to apply: the list is only recorded.
  const berlin = common.isActivatedEIP(2930);
  let previous = new AccessListRecorder(excluded, msg.accessList ?? []);
  for (let run = 0; run < limits.maxAccessListRuns; run++) {
    const list = previous.list();
    const recorder = new AccessListRecorder(excluded, list);
    const attempt: CallRequest = { ...msg, gas, nonce };
    if (berlin) attempt.accessList = list;
    else delete attempt.accessList;
    let outcome: SimulatedCall;
    try {
      outcome = await session.simulate(attempt, 0, null, {
        dialect: 'geth',
        isolated: true,
        onOp: recorder.onOp,
      });
    } catch (e) {
      // geth hashes the transaction without checking it: the uncapped simulation rules (EIP-7825's
      // per-transaction cap would refuse the gas cap) let ethereumjs build it too.
      const hash = unsignedHash(attempt, chain.chainId, simulationCommon(common));
      // A call that makes no transaction (ethereumjs refuses its fields) has no hash to name.
      throw asCallError(e, (reason) =>
        hash === null
          ? `failed to apply transaction: ${reason}`
          : `failed to apply transaction: ${hash} err: ${reason}`,
      );
    }
    if (recorder.equals(previous)) {
      const error = outcome.failed ? vmError(outcome) : undefined;
      return { accessList: list, gasUsed: usedGas(outcome), ...(error !== undefined ? { error } : {}) };
    }
    previous = recorder;
  }
  throw new RequestFailed(`access list did not settle after ${limits.maxAccessListRuns} runs of the call`);
}

function recoverAuthority(auth: NonNullable<CallRequest['authorizationList']>[number]): Uint8Array | null {
  try {
    return eoaCode7702RecoverAuthority([
      bigIntToBytes(auth.chainId),
      auth.address,
      bigIntToBytes(auth.nonce),
      bigIntToBytes(auth.yParity),
      bigIntToBytes(auth.r),
      bigIntToBytes(auth.s),
    ]).bytes;
  } catch {
    return null;
  }
}

// The opcodes geth's access-list tracer watches.
const { SLOAD, SSTORE } = Op;
const ADDRESS_OPERAND_OPS = new Set<number>([
  Op.BALANCE,
  Op.EXTCODESIZE,
  Op.EXTCODECOPY,
  Op.EXTCODEHASH,
  Op.SELFDESTRUCT,
]);
const CALL_OPS = new Set<number>([Op.CALL, Op.CALLCODE, Op.DELEGATECALL, Op.STATICCALL]);

/**
 * geth's access-list tracer: the slots SLOAD/SSTORE name (for any contract, the recipient included)
 * and the addresses BALANCE, EXTCODE*, SELFDESTRUCT and the CALLs name (less the excluded ones), as
 * each opcode is about to run, whether or not it then succeeds.
 */
class AccessListRecorder {
  private readonly entries = new Map<string, Set<string>>();

  constructor(
    private readonly excluded: ReadonlySet<string>,
    initial: readonly AccessListEntry[],
  ) {
    for (const { address, storageKeys } of initial) {
      const key = bytesKey(address);
      if (excluded.has(key)) continue;
      this.addAddress(key);
      for (const slot of storageKeys) this.entries.get(key)?.add(bytesKey(slot));
    }
  }

  readonly onOp = (op: number, address: bigint, stack: readonly bigint[], sp: number): void => {
    if (sp === 0) return;
    const top = stack[sp - 1] as bigint;
    if (op === SLOAD || op === SSTORE) {
      const key = addressKey(address);
      this.addAddress(key);
      this.entries.get(key)?.add(bytesKey(bigintWord(top)));
    } else if (ADDRESS_OPERAND_OPS.has(op)) {
      this.addUnlessExcluded(top);
    } else if (CALL_OPS.has(op) && sp >= 5) {
      this.addUnlessExcluded(stack[sp - 2] ?? 0n);
    }
  };

  /** Addresses ascending, each with its slots ascending (geth's order). */
  list(): AccessListEntry[] {
    return [...this.entries.keys()].sort().map((address) => ({
      address: Buffer.from(address, 'hex'),
      storageKeys: [...(this.entries.get(address) ?? [])].sort().map((slot) => Buffer.from(slot, 'hex')),
    }));
  }

  equals(other: AccessListRecorder): boolean {
    if (this.entries.size !== other.entries.size) return false;
    for (const [address, slots] of this.entries) {
      const theirs = other.entries.get(address);
      if (!theirs || theirs.size !== slots.size) return false;
      for (const slot of slots) if (!theirs.has(slot)) return false;
    }
    return true;
  }

  private addUnlessExcluded(value: bigint): void {
    const key = addressKey(value & ((1n << 160n) - 1n));
    if (!this.excluded.has(key)) this.addAddress(key);
  }

  private addAddress(key: string): void {
    if (!this.entries.has(key)) this.entries.set(key, new Set());
  }
}

/** An address as the recorder's keys name it (bytesKey of its 20 bytes). */
function addressKey(address: bigint): string {
  return address.toString(16).padStart(40, '0');
}

/**
 * The hash geth names in createAccessList's failures: of the unsigned transaction its arguments make
 * (geth's ToTransaction: the newest type the fields need, legacy when a gas price is given), or
 * null when ethereumjs cannot make a transaction of the fields.
 */
function unsignedHash(call: CallRequest, chainId: bigint, common: Common): string | null {
  const type = call.authorizationList
    ? 4
    : call.blobVersionedHashes
      ? 3
      : call.maxFeePerGas !== undefined
        ? 2
        : call.accessList
          ? 1
          : 0;
  const data: Record<string, unknown> = {
    type: call.gasPrice !== undefined ? 0 : type,
    nonce: call.nonce ?? 0n,
    gasLimit: call.gas ?? 0n,
    to: call.to ?? undefined,
    value: call.value ?? 0n,
    data: call.data ?? new Uint8Array(),
    chainId,
    gasPrice: call.gasPrice,
    maxFeePerGas: call.maxFeePerGas,
    maxPriorityFeePerGas: call.maxPriorityFeePerGas,
    accessList: (call.accessList ?? []).map((e) => [e.address, e.storageKeys]),
    maxFeePerBlobGas: call.maxFeePerBlobGas,
    blobVersionedHashes: call.blobVersionedHashes,
    authorizationList: (call.authorizationList ?? []).map((a) => [
      bigIntToBytes(a.chainId),
      a.address,
      bigIntToBytes(a.nonce),
      bigIntToBytes(a.yParity),
      bigIntToBytes(a.r),
      bigIntToBytes(a.s),
    ]),
  };
  try {
    return toHex(keccak256(createTx(data as Parameters<typeof createTx>[0], { common }).serialize()));
  } catch {
    return null;
  }
}

import { InvalidArgument } from '../../../core/errors.ts';
import { toHex } from '../../../primitives/hex.ts';
import { RpcError } from '../../errors.ts';
import { address, blockSelector, hash, LATEST, optional, ParamProblem, required } from '../../params.ts';
import { method } from '../define.ts';
import { goJsonType } from './getStorageAt.ts';

// geth's cap on slots per request, over all addresses: each slot is one lookup and one 66-byte answer.
const MAX_SLOTS = 1024;
// geth's code for a request over a client limit (shared with eth_simulateV1's "too many blocks").
const CLIENT_LIMIT_EXCEEDED = -38026;

interface SlotRequest {
  /** Lower-case hex, the form geth writes the answer's keys in. */
  key: string;
  address: Uint8Array;
  slots: Uint8Array[];
}

function slotRequests(value: unknown): SlotRequest[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ParamProblem(
      `json: cannot unmarshal ${goJsonType(value)} into Go value of type map[common.Address][]common.Hash`,
    );
  }
  // Keys differing only in case name one account: the later one wins, as in geth's map.
  const byAddress = new Map<string, SlotRequest>();
  for (const [key, slots] of Object.entries(value)) {
    const who = address(key);
    if (!Array.isArray(slots)) {
      throw new ParamProblem(
        `json: cannot unmarshal ${goJsonType(slots)} into Go value of type []common.Hash`,
      );
    }
    const hexKey = toHex(who);
    byAddress.set(hexKey, { key: hexKey, address: who, slots: slots.map(hash) });
  }
  return [...byAddress.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Many slots of many accounts at one block: eth_getStorageAt batched, with geth's limits. */
export const eth_getStorageValues = method(
  [required(slotRequests), optional(blockSelector)],
  async ([requests, block], { services }) => {
    const total = requests.reduce((sum, r) => sum + r.slots.length, 0);
    if (total > MAX_SLOTS) throw new RpcError(CLIENT_LIMIT_EXCEEDED, `too many slots (max ${MAX_SLOTS})`);
    if (total === 0) throw new InvalidArgument('empty request');
    const { number } = await services.chain.stateBlock(block ?? LATEST);
    const result: Record<string, string[]> = {};
    for (const r of requests) {
      const values = await Promise.all(
        r.slots.map((slot) => services.state.storage(r.address, slot, number)),
      );
      result[r.key] = values.map(toHex);
    }
    return result;
  },
);

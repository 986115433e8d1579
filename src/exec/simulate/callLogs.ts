import type { EvmTracer, FrameEnd, FrameStart, SelfDestructEvent } from '../../evm/hooks.ts';

/** ERC-7528's address for ETH, the emitter of eth_simulateV1's transfer logs. */
const ETH_ADDRESS = 0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeen;
/** keccak256("Transfer(address,address,uint256)"), ERC-20's event. */
const TRANSFER_TOPIC = 0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3efn;

/** A log of a simulated call, numbered within its block. */
export interface NumberedLog {
  address: bigint;
  topics: readonly bigint[];
  data: Uint8Array;
  index: number;
}

/**
 * The logs of one simulated call as eth_simulateV1 shows them: the EVM's, and with `transfers` every
 * move of ETH (a call's or creation's value, a self-destruct's balance) as an ERC-20 Transfer log
 * from ERC-7528's address. Logs of a frame that fails are dropped with it; their numbers are not
 * given back (as geth counts them).
 */
export class CallLogs {
  /** One list per open frame. */
  private frames: NumberedLog[][] = [];
  private result: NumberedLog[] = [];

  constructor(
    private readonly transfers: boolean,
    /** The block's log counter, shared by its calls. */
    private readonly counter: { next: number },
  ) {}

  get logs(): NumberedLog[] {
    return this.result;
  }

  readonly tracer: EvmTracer = {
    frameStart: (frame: FrameStart) => {
      this.frames.push([]);
      if (frame.kind !== 'delegatecall' && frame.kind !== 'callcode' && frame.value > 0n)
        this.transfer(frame.from, frame.to, frame.value);
    },
    frameEnd: (end: FrameEnd) => {
      const frame = this.frames.pop() ?? [];
      const failed = end.error !== null;
      if (end.depth === 0) {
        this.result = failed ? [] : frame;
        return;
      }
      if (!failed) this.frames[this.frames.length - 1]?.push(...frame);
    },
    log: (address, topics, data) => this.add(address, topics, data),
    selfDestruct: (event: SelfDestructEvent) => {
      if (event.balance > 0n) this.transfer(event.address, event.beneficiary, event.balance);
    },
  };

  private transfer(from: bigint, to: bigint, value: bigint): void {
    if (!this.transfers) return;
    const data = new Uint8Array(32);
    let v = value;
    for (let i = 31; i >= 0 && v > 0n; i--) {
      data[i] = Number(v & 0xffn);
      v >>= 8n;
    }
    this.add(ETH_ADDRESS, [TRANSFER_TOPIC, from, to], data);
  }

  private add(address: bigint, topics: readonly bigint[], data: Uint8Array): void {
    this.frames[this.frames.length - 1]?.push({
      address,
      topics: [...topics],
      data: data.slice(),
      index: this.counter.next++,
    });
  }
}

import { address, required } from '../../params.ts';
import { method } from '../define.ts';

// Transactions are mined as they arrive, so nothing ever waits in a pool.
export const txpool_status = method([], () => ({ pending: '0x0', queued: '0x0' }));
export const txpool_content = method([], () => ({ pending: {}, queued: {} }));
export const txpool_contentFrom = method([required(address)], () => ({ pending: {}, queued: {} }));

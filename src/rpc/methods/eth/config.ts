import { chainConfig } from '../../../services/chainConfig.ts';
import { method } from '../define.ts';

/** EIP-7910: the fork configuration in force at the head, the next scheduled and the last scheduled. */
export const eth_config = method([], (_args, { services }) => chainConfig(services.chain));

import { method } from '../define.ts';

export const web3_clientVersion = method([], (_args, { services }) => services.clientVersion);

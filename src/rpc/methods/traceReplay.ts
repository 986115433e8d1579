import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';

export const TRACE_REPLAY_METHODS: MethodTable<Services> = {};

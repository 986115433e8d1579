import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';

export const DEBUG_TRACE_METHODS: MethodTable<Services> = {};

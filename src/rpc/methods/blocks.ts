import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';

export const BLOCKS_METHODS: MethodTable<Services> = {};

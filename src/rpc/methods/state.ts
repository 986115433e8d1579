import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';

export const STATE_METHODS: MethodTable<Services> = {};

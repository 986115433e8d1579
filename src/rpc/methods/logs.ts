import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';

export const LOGS_METHODS: MethodTable<Services> = {};

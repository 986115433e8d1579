#!/usr/bin/env node
// The CLI runs its TypeScript sources directly (tsx), so `npx ethtrace` works right after `npm ci`
// with no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');

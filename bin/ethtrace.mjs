#!/usr/bin/env node
// Runs the compiled CLI (bin/build.mjs): built by `npm ci`, and again here whenever the sources
// changed since, so `npx ethtrace` works right after `npm ci` and start-up pays no compiler.
import { compiledModule } from './build.mjs';

await import(compiledModule('main').href);

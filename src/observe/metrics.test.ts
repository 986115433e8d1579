import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CAUGHT_SITES, caught, caughtCounts } from '../core/caught.ts';
import { Metrics } from './metrics.ts';

describe('ethtrace_caught_errors_total', () => {
  it('shows every site, at what core/caught.ts counted', async () => {
    caught('upstream-cache-drop', '', { quiet: true });
    const text = await new Metrics({ defaultMetrics: false }).text();
    for (const site of CAUGHT_SITES)
      assert.ok(
        text.includes(`ethtrace_caught_errors_total{site="${site}"} ${caughtCounts().get(site) ?? 0}\n`),
        `${site} in:\n${text}`,
      );
    assert.ok((caughtCounts().get('upstream-cache-drop') ?? 0) >= 1);
  });
});

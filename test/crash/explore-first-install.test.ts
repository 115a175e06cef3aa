import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentctl } from '../helpers/host.js';
import { formatViolations } from './explorer.js';
import { APP, exploreHelperScenario, sleepReleaseArgs } from './helper-scenario.js';
import { requireStrace } from './settings.js';

// Issue 7, item 1, from nothing: a fresh root, the helper's first start (layout, helper key)
// and the first install of the app, which creates the app's folders as it goes. Every crash
// state recovers to nothing installed or to 1.0.0 complete.
test('every crash state of a first start and first install recovers', async (t) => {
  if (!requireStrace(t)) return;
  const { x } = await exploreHelperScenario(t, 'first start and first install', {
    installed: [],
    act: (h) => agentctl(h, ['update', APP, '1.0.0', ...sleepReleaseArgs(h, '1.0.0'), '--attempt-id', 'crash-first', '--json']),
    expect: (r) => assert.equal(r?.json?.outcome, 'active', `the traced install: ${r?.stdout} ${r?.stderr}`),
  });
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
});

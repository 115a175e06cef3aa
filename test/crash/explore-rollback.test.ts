import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentctl } from '../helpers/host.js';
import { formatViolations } from './explorer.js';
import { APP, exploreHelperScenario, sleepReleaseArgs } from './helper-scenario.js';
import { requireStrace } from './settings.js';

// Issue 7, item 1, the journal protocol's way back: an update whose new version fails its probe
// (stop new, swap back, start old, quarantine, rolled-back), and an operator's rollback to the
// previous version. Every crash state recovers to a consistent host.
test('every crash state of a failed update that rolls back to 2.0.0 recovers', async (t) => {
  if (!requireStrace(t)) return;
  const { x } = await exploreHelperScenario(t, 'failed update, rolled back', {
    installed: ['1.0.0', '2.0.0'],
    act: (h) => agentctl(h, ['update', APP, '3.0.0', ...sleepReleaseArgs(h, '3.0.0', false), '--attempt-id', 'crash-bad', '--json']),
    expect: (r) => assert.equal(r?.json?.outcome, 'rolled-back', `the traced update: ${r?.stdout} ${r?.stderr}`),
  });
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
});

test('every crash state of agentctl rollback (2.0.0 back to 1.0.0) recovers', async (t) => {
  if (!requireStrace(t)) return;
  const { x } = await exploreHelperScenario(t, 'agentctl rollback', {
    installed: ['1.0.0', '2.0.0'],
    act: (h) => agentctl(h, ['rollback', APP, '--json']),
    expect: (r) => assert.equal(r?.json?.outcome, 'active', `the traced rollback: ${r?.stdout} ${r?.stderr}`),
  });
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
});

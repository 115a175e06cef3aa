// A start that would ask nobody names why each node is left out, grouped by reason: a node
// skipped while the control plane refuses its heartbeats for clock skew is named CLOCK_SKEW, as
// rollout status names it, not NO_RECENT_HEARTBEAT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Plan } from '../../src/core/rollout-planner.js';
import { nobodyToAsk } from '../../src/control/rollouts/nothing-to-ask.js';

function planOf(nodes: Plan['nodes']): Plan {
  return { status: 'running', canaries: [], nodes, issue: null, failures: 0, batchSize: 1, refusedLimit: 0, canaryCount: 0 } as unknown as Plan;
}

test('skipped nodes are grouped by their reason: CLOCK_SKEW apart from NO_RECENT_HEARTBEAT', () => {
  const plan = planOf({
    'n-a': { state: 'skipped', reason: 'CLOCK_SKEW', batch: null },
    'n-b': { state: 'skipped', reason: 'NO_RECENT_HEARTBEAT', batch: null },
    'n-c': { state: 'skipped', reason: 'CLOCK_SKEW', batch: null },
    'n-d': { state: 'already-current', reason: 'REPORTED', batch: null },
  });
  const hostnames = new Map([['n-a', 'web-a'], ['n-b', 'web-b'], ['n-c', 'web-c'], ['n-d', 'web-d']]);
  const text = nobodyToAsk('web', '1.1.0', plan, hostnames);
  assert.match(text, /^nothing to do for web 1\.1\.0: none of the 4 selected nodes would be asked: /);
  assert.match(text, /1 node already runs 1\.1\.0 \(REPORTED\): n-d \(web-d\)/);
  assert.match(text, /2 nodes have their heartbeats refused for their clocks \(CLOCK_SKEW[^)]*\): n-a \(web-a\), n-c \(web-c\)/);
  assert.match(text, /1 node sent no heartbeat in the last 3 intervals \(NO_RECENT_HEARTBEAT\): n-b \(web-b\)/);
});

test('a hostname with control characters is named escaped', () => {
  const text = nobodyToAsk('web', '1.1.0', planOf({ 'n-a': { state: 'not-targeted', reason: 'APP_NOT_ON_NODE', batch: null } }), new Map([['n-a', 'evil\nhost']]));
  assert.ok(!text.includes('\n'), text);
  assert.match(text, /1 node does not run web \(APP_NOT_ON_NODE\): n-a \(evil/);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { agentctl } from '../helpers/host.js';
import { explore, formatViolations, stateWorkDir } from './explorer.js';
import { APP, crashHost, helperCheck, releaseTrees, sleepReleaseArgs, traceHelper } from './helper-scenario.js';
import { crashCap, crashSeed, requireStrace } from './settings.js';

// Issue 7, item 1, from nothing: a fresh root, the helper's first start (layout, helper key)
// and the first install of the app, which creates the app's folders as it goes. Every crash
// state recovers to nothing installed or to 1.0.0 complete.
test('every crash state of a first start and first install recovers', async (t) => {
  if (!requireStrace(t)) return;
  const host = crashHost();
  t.after(() => host.cleanup());
  const rec = await traceHelper(host, (h) => agentctl(h, ['update', APP, '1.0.0', ...sleepReleaseArgs(h, '1.0.0'), '--attempt-id', 'crash-first', '--json']));
  assert.equal(rec.result?.json?.outcome, 'active', `the traced install: ${rec.result?.stdout} ${rec.result?.stderr}`);
  const before = { app: APP, highestActive: null, receiptSeqs: [], trees: await releaseTrees(host) };
  const work = await stateWorkDir(host.scratch);
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const x = await explore('first start and first install', rec, work, helperCheck(before), { cap: crashCap(), seed: crashSeed() });
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
});

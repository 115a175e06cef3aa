import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { agentctl } from '../helpers/host.js';
import { explore, formatViolations, stateWorkDir } from './explorer.js';
import { APP, beforeOf, crashHost, helperCheck, installVersions, releaseTrees, sleepReleaseArgs, traceHelper } from './helper-scenario.js';
import { crashCap, crashSeed, requireStrace } from './settings.js';

// Issue 7, item 1, the journal protocol's way back: an update whose new version fails its probe
// (stop new, swap back, start old, quarantine, rolled-back), and an operator's rollback to the
// previous version. Every crash state recovers to a consistent host.
test('every crash state of a failed update that rolls back to 2.0.0 recovers', async (t) => {
  if (!requireStrace(t)) return;
  const host = crashHost();
  t.after(() => host.cleanup());
  await installVersions(host, ['1.0.0', '2.0.0']);
  const before = await beforeOf(host);
  const rec = await traceHelper(host, (h) => agentctl(h, ['update', APP, '3.0.0', ...sleepReleaseArgs(h, '3.0.0', false), '--attempt-id', 'crash-bad', '--json']));
  assert.equal(rec.result?.json?.outcome, 'rolled-back', `the traced update: ${rec.result?.stdout} ${rec.result?.stderr}`);
  await releaseTrees(host, before.trees);
  const work = await stateWorkDir(host.scratch);
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const x = await explore('failed update, rolled back', rec, work, helperCheck(before), { cap: crashCap(), seed: crashSeed() });
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
});

test('every crash state of agentctl rollback (2.0.0 back to 1.0.0) recovers', async (t) => {
  if (!requireStrace(t)) return;
  const host = crashHost();
  t.after(() => host.cleanup());
  await installVersions(host, ['1.0.0', '2.0.0']);
  const before = await beforeOf(host);
  const rec = await traceHelper(host, (h) => agentctl(h, ['rollback', APP, '--json']));
  assert.equal(rec.result?.json?.outcome, 'active', `the traced rollback: ${rec.result?.stdout} ${rec.result?.stderr}`);
  await releaseTrees(host, before.trees);
  const work = await stateWorkDir(host.scratch);
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const x = await explore('agentctl rollback', rec, work, helperCheck(before), { cap: crashCap(), seed: crashSeed() });
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { agentctl } from '../helpers/host.js';
import { explore, formatViolations, stateWorkDir } from './explorer.js';
import { APP, beforeOf, crashHost, helperCheck, installVersions, releaseTrees, sleepReleaseArgs, traceHelper } from './helper-scenario.js';
import { withoutFolderFsyncAfterCurrentRename, withoutJournalFileFsync, withoutTreeSyncfs } from './mutations.js';
import { crashCap, crashSeed, mutationCap, requireStrace } from './settings.js';

// Issue 7, items 1-3, for an update (stage: the durable tree; activation: the journal and the
// atomic symlink swap; verdict, receipt, prune): every crash state a power cut could leave
// recovers to a consistent host, and the explorer finds the bug when an fsync is left out.
test('every crash state of an update from 2.0.0 to 3.0.0 recovers, and a missing fsync is found', async (t) => {
  if (!requireStrace(t)) return;
  const host = crashHost();
  t.after(() => host.cleanup());
  await installVersions(host, ['1.0.0', '2.0.0']);
  const before = await beforeOf(host);
  const rec = await traceHelper(host, (h) => agentctl(h, ['update', APP, '3.0.0', ...sleepReleaseArgs(h, '3.0.0'), '--attempt-id', 'crash-update', '--json']));
  assert.equal(rec.result?.json?.outcome, 'active', `the traced update: ${rec.result?.stdout} ${rec.result?.stderr}`);
  await releaseTrees(host, before.trees);
  const work = await stateWorkDir(host.scratch);
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const opts = { cap: crashCap(), seed: crashSeed() };
  const mutated = { cap: mutationCap(), seed: crashSeed() };

  const x = await explore('update', rec, work, helperCheck(before), opts);
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));

  // The mutations: the same trace without one fsync must show at least one violating state.
  const m1 = await explore('update without the folder fsync after the current rename', { snapshot: rec.snapshot, ops: withoutFolderFsyncAfterCurrentRename(rec.ops) }, work, helperCheck(before), mutated);
  assert.ok(m1.violations.length > 0, 'the explorer finds no state broken by the missing folder fsync');
  console.log(formatViolations(m1, 1));

  const m2 = await explore('update without the journal file fsync', { snapshot: rec.snapshot, ops: withoutJournalFileFsync(rec.ops) }, work, helperCheck(before), mutated);
  assert.ok(m2.violations.length > 0, 'the explorer finds no state broken by the missing journal fsync');
  console.log(formatViolations(m2, 1));

  // And the durable tree: without its syncfs, `current` can end up on a tree whose files are empty.
  const m3 = await explore('update without the syncfs of the staged tree', { snapshot: rec.snapshot, ops: withoutTreeSyncfs(rec.ops) }, work, helperCheck(before), mutated);
  assert.ok(m3.violations.length > 0, 'the explorer finds no state broken by the missing syncfs');
  console.log(formatViolations(m3, 1));
});

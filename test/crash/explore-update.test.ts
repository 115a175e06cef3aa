import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentctl } from '../helpers/host.js';
import { explore, formatViolations } from './explorer.js';
import { APP, binaryCheck, exploreHelperScenario, helperCheck, sleepReleaseArgs } from './helper-scenario.js';
import { withoutFolderFsyncAfterCurrentRename, withoutJournalFileFsync, withoutTreeSyncfs } from './mutations.js';
import { crashSeed, mutationCap, requireStrace } from './settings.js';

// Issue 7, items 1-3, for an update (stage: the durable tree; activation: the journal and the
// atomic symlink swap; verdict, receipt, prune): every crash state a power cut could leave
// recovers to a consistent host, and the explorer finds the bug when an fsync is left out.
test('every crash state of an update from 2.0.0 to 3.0.0 recovers, and a missing fsync is found', async (t) => {
  if (!requireStrace(t)) return;
  const { x, rec, before, work } = await exploreHelperScenario(t, 'update', {
    installed: ['1.0.0', '2.0.0'],
    act: (h) => agentctl(h, ['update', APP, '3.0.0', ...sleepReleaseArgs(h, '3.0.0'), '--attempt-id', 'crash-update', '--json']),
    expect: (r) => assert.equal(r?.json?.outcome, 'active', `the traced update: ${r?.stdout} ${r?.stderr}`),
  });
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
  // A few of the same states, started by the real steward-helper binary instead of startApps.
  const xbin = await explore('update, started by the steward-helper binary', rec, work, binaryCheck(before), { cap: 6, seed: crashSeed() });
  assert.equal(xbin.violations.length, 0, formatViolations(xbin));

  // The mutations: the same trace without one sync must show at least one violating state (each
  // exploration stops once it has; the first keeps three for the binary to start again).
  const mutated = { cap: mutationCap(), seed: crashSeed(), enough: 1 };
  const m1 = await explore('update without the folder fsync after the current rename', { snapshot: rec.snapshot, ops: withoutFolderFsyncAfterCurrentRename(rec.ops) }, work, helperCheck(before), { ...mutated, enough: 3 });
  assert.ok(m1.violations.length > 0, 'the explorer finds no state broken by the missing folder fsync');
  console.log(formatViolations(m1, 1));
  // The real steward-helper binary, started with --root on the same broken states, breaks the same way.
  const m1bin = await explore(
    'the same states, started by the steward-helper binary',
    { snapshot: rec.snapshot, ops: withoutFolderFsyncAfterCurrentRename(rec.ops) },
    work,
    binaryCheck(before),
    { cap: mutated.cap, seed: mutated.seed, states: m1.violations.slice(0, 3).map((v) => v.state) },
  );
  assert.equal(m1bin.violations.length, m1bin.checked, formatViolations(m1bin));

  const m2 = await explore('update without the journal file fsync', { snapshot: rec.snapshot, ops: withoutJournalFileFsync(rec.ops) }, work, helperCheck(before), mutated);
  assert.ok(m2.violations.length > 0, 'the explorer finds no state broken by the missing journal fsync');
  console.log(formatViolations(m2, 1));

  // And the durable tree: without its syncfs, `current` can end up on a tree whose files are empty.
  const m3 = await explore('update without the syncfs of the staged tree', { snapshot: rec.snapshot, ops: withoutTreeSyncfs(rec.ops) }, work, helperCheck(before), mutated);
  assert.ok(m3.violations.length > 0, 'the explorer finds no state broken by the missing syncfs');
  console.log(formatViolations(m3, 1));
});

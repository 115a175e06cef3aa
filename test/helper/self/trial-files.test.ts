import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StewardError } from '../../../src/core/errors.js';
import { SELF_FILES } from '../../../src/core/self-schemas.js';
import { readSelfFiles } from '../../../src/helper/self/self-files.js';
import { readTrialState } from '../../../src/helper/self/trial-state.js';
import { commitTrial, resetStartCounter, writeCandidate } from '../../../src/helper/self/trial-steps.js';
import { LauncherHost } from '../../helpers/launcher-host.js';

// The helper's side of the trial's files (src/helper/self/): reads that never throw on what a
// file holds (docs/design.md §16), the candidate written atomically, the commit.

function host(t: TestContext): LauncherHost {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-self-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const h = new LauncherHost(dir, '0.9.0');
  h.addRelease('1.0.0', 'good');
  h.setCurrent('1.0.0');
  return h;
}

const code = (c: string) => (err: unknown) => err instanceof StewardError && err.code === c;

test('each file of self/ reads absent, valid, unreadable or newer, and none throws', async (t) => {
  const h = host(t);
  assert.deepEqual(Object.values(await readSelfFiles(h.paths)).map((r) => r.state), Array(6).fill('absent'));
  const garbage: [string, string | Buffer | null, string][] = [
    ['empty', '', 'unreadable'],
    ['truncated', '{"schemaVersion":1,"vers', 'unreadable'],
    ['zeros of a lost write', Buffer.alloc(60), 'unreadable'],
    ['pretty-printed, not the launcher\'s line', '{\n  "schemaVersion": 1,\n  "version": "2.0.0",\n  "source": "release"\n}\n', 'unreadable'],
    ['a bad version', '{"schemaVersion":1,"version":"../x","source":"release"}\n', 'unreadable'],
    ['a newer format', '{"schemaVersion":2,"version":"2.0.0","source":"release","more":1}\n', 'newer'],
    ['too big', 'x'.repeat(600), 'unreadable'],
    ['a folder', null, 'unreadable'],
  ];
  for (const [what, text, want] of garbage) {
    for (const name of ['candidate', 'trying', 'reverted']) {
      rmSync(path.join(h.selfDir, name), { recursive: true, force: true });
      if (text === null) mkdirSync(path.join(h.selfDir, name), { recursive: true });
      else h.writeSelf(name, text);
    }
    const files = await readSelfFiles(h.paths);
    assert.equal(files.candidate.state, want, what);
    assert.equal(files.reverted.state, want, what);
  }
  rmSync(path.join(h.selfDir, 'trying'), { recursive: true, force: true });
  symlinkSync('/etc/passwd', path.join(h.selfDir, 'trying'));
  assert.equal((await readSelfFiles(h.paths)).trying.state, 'unreadable', 'a symlink is not followed');
});

test('the trial state names every unreadable file, says how the launcher started the helper, and never throws', async (t) => {
  const h = host(t);
  for (const name of SELF_FILES) h.writeSelf(name, 'garbage');
  const s = await readTrialState(h.paths, { STEWARD_SELF_DECISION: 'fallback', STEWARD_SELF_VERSION: '0.9.0' });
  assert.deepEqual(s.launched, { decision: 'fallback', version: '0.9.0' });
  assert.equal(s.current, '1.0.0');
  assert.equal(s.problems.length, 6);
  for (const name of SELF_FILES) assert.ok(s.problems.some((p) => p.includes(path.join(h.selfDir, name))), name);
  assert.deepEqual([s.onTrial, s.reverted, s.fallback], [null, null, null]);
  const odd = await readTrialState(h.paths, { STEWARD_SELF_DECISION: 'sure', STEWARD_SELF_VERSION: '1' });
  assert.equal(odd.launched, null);
  assert.match(odd.problems.at(-1)!, /STEWARD_SELF_DECISION="sure".*is not a launcher's decision/);
  assert.equal((await readTrialState(h.paths, {})).launched, null);
});

test('a reverted trial that names current is reported as committed (its commit was cut after the swap)', async (t) => {
  const h = host(t);
  h.writeSelf('reverted', '{"schemaVersion":1,"version":"1.0.0","source":"release"}\n');
  assert.equal((await readTrialState(h.paths, {})).reverted?.committed, true);
  h.writeSelf('reverted', '{"schemaVersion":1,"version":"2.0.0","source":"release"}\n');
  assert.deepEqual((await readTrialState(h.paths, {})).reverted, { schemaVersion: 1, version: '2.0.0', source: 'release', committed: false });
  h.writeSelf('fallback', '{"schemaVersion":1,"version":"1.0.0","starts":3}\n');
  assert.deepEqual((await readTrialState(h.paths, {})).fallback, { schemaVersion: 1, version: '1.0.0', starts: 3 });
});

test('writeCandidate writes the launcher\'s line atomically in a 0700 self/, and refuses what cannot be a candidate', async (t) => {
  const h = host(t);
  h.addRelease('2.0.0', 'good');
  await writeCandidate(h.paths, '2.0.0');
  assert.equal(h.readSelf('candidate'), '{"schemaVersion":1,"version":"2.0.0","source":"release"}\n');
  assert.equal(statSync(path.join(h.selfDir, 'candidate')).mode & 0o777, 0o600);
  assert.equal(statSync(h.selfDir).mode & 0o777, 0o700);
  assert.deepEqual(readdirSync(h.selfDir), ['candidate'], 'no temp file is left');
  await assert.rejects(writeCandidate(h.paths, '2.0'), code('BAD_REQUEST'));
  await assert.rejects(writeCandidate(h.paths, '3.0.0'), code('RELEASE_INVALID'));
  await assert.rejects(writeCandidate(h.paths, '1.0.0'), code('ALREADY_ACTIVE'));
  h.writeSelf('trying', '{"schemaVersion":1,"version":"2.0.0","source":"release"}\n');
  await assert.rejects(writeCandidate(h.paths, '2.0.0'), code('BUSY'));
});

test('commitTrial swaps current, then removes trying, the start count and the fallback', async (t) => {
  const h = host(t);
  h.addRelease('2.0.0', 'good');
  h.writeSelf('trying', '{"schemaVersion":1,"version":"2.0.0","source":"release"}\n');
  h.writeSelf('starts', '{"schemaVersion":1,"version":"1.0.0","starts":2}\n');
  h.writeSelf('fallback', '{"schemaVersion":1,"version":"1.0.0","starts":3}\n');
  h.writeSelf('reverted', '{"schemaVersion":1,"version":"1.5.0","source":"release"}\n');
  await commitTrial(h.paths, '2.0.0');
  assert.equal(h.current(), 'versions/2.0.0');
  assert.deepEqual(readdirSync(h.selfDir), ['reverted'], 'an older revert stays until the helper reports it');
  assert.equal(readdirSync(h.appDir).filter((n) => n.startsWith('.')).length, 0, 'no temp link is left');
});

test('commitTrial refuses a version that is not on trial, or whose tree is not in versions/, and changes nothing', async (t) => {
  const h = host(t);
  h.addRelease('2.0.0', 'good');
  await assert.rejects(commitTrial(h.paths, '2.0.0'), code('STATE_INVALID'));
  h.writeSelf('trying', '{"schemaVersion":1,"version":"3.0.0","source":"release"}\n');
  await assert.rejects(commitTrial(h.paths, '2.0.0'), code('STATE_INVALID'));
  h.writeSelf('trying', '{"schemaVersion":1,"version":"0.9.0","source":"package"}\n');
  await assert.rejects(commitTrial(h.paths, '0.9.0'), (err) => code('RELEASE_INVALID')(err) && /package's tree is to be staged there/.test((err as Error).message));
  assert.equal(h.current(), 'versions/1.0.0');
  assert.notEqual(h.readSelf('trying'), null);
});

test('resetStartCounter removes the start count, and is fine when there is none', async (t) => {
  const h = host(t);
  await resetStartCounter(h.paths);
  h.writeSelf('starts', '{"schemaVersion":1,"version":"1.0.0","starts":2}\n');
  await resetStartCounter(h.paths);
  assert.equal(h.readSelf('starts'), null);
});

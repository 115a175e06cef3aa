import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostPaths } from '../../src/core/paths.js';
import { layoutRules } from '../../src/core/doctor/layout-rules.js';
import { checkPermissions } from '../../src/core/doctor/permission-checks.js';
import type { Entry, Owners, TreeWalk } from '../../src/core/doctor/observations.js';

const P = hostPaths('');
const RULES = layoutRules(P);
const OWNERS: Owners = { rootUid: 0, stewardUid: 990, stewardGid: 990, note: '', accountProblem: '' };
const ROOTS = ['/etc/steward', '/opt/steward', '/var/lib/steward'];

const dir = (path: string, mode: number, uid = 0, gid = 0): Entry => ({ path, type: 'dir', uid, gid, mode });
const file = (path: string, mode: number, uid = 0, gid = 0): Entry => ({ path, type: 'file', uid, gid, mode });

// A healthy production layout.
function healthy(): Entry[] {
  return [
    dir('/etc/steward', 0o755),
    file('/etc/steward/steward.json', 0o644),
    dir('/etc/steward/trusted-keys', 0o755),
    dir('/etc/steward/trusted-keys/web', 0o755),
    file('/etc/steward/trusted-keys/web/k.pub', 0o644),
    dir('/opt/steward', 0o755),
    dir('/opt/steward/apps/web/versions/1.0.0', 0o555),
    file('/opt/steward/apps/web/versions/1.0.0/server.js', 0o444),
    { path: '/opt/steward/apps/web/current', type: 'symlink', uid: 0, gid: 0, mode: 0o777 },
    dir('/var/lib/steward', 0o755),
    dir('/var/lib/steward/journal', 0o700),
    file('/var/lib/steward/journal/web.json', 0o600),
    dir('/var/lib/steward/receipts', 0o750, 0, 990),
    file('/var/lib/steward/receipts/web.json', 0o640, 0, 990),
    dir('/var/lib/steward/keys', 0o700),
    file('/var/lib/steward/keys/helper.key', 0o600),
    file('/var/lib/steward/helper.pub', 0o644),
  ];
}
const extraHealthy = (): Entry[] => [dir('/run/steward', 0o750, 0, 990), dir('/var/lib/steward-agent', 0o700, 990, 990), file('/var/lib/steward-agent/node.key', 0o600, 990, 990)];
const walkOf = (entries: Entry[], over: Partial<TreeWalk> = {}): TreeWalk => ({ roots: ROOTS, entries, capped: false, cap: 100_000, unreadable: [], ...over });

function run(change: (e: Entry) => Entry, extra = extraHealthy()) {
  return checkPermissions(walkOf(healthy().map(change)), extra.map(change), RULES, OWNERS);
}
const at = (p: string, patch: Partial<Entry>) => (e: Entry) => (e.path === p ? { ...e, ...patch } : e);

test('a healthy layout, the agent folder owned by steward included, passes with one ok line', () => {
  const r = run((e) => e);
  assert.deepEqual(r.map((x) => x.status), ['ok']);
});

test('the ok line says the rule itself, not a section of a document a host does not have', () => {
  const [line] = run((e) => e);
  assert.match(line?.detail ?? '', /^\d+ entries have the owner, group and mode steward gives them, and only root can write what root reads$/);
  assert.doesNotMatch(line?.detail ?? '', /design|§/i);
});

test('each planted problem fails once, naming the path, what was found and what was expected', () => {
  const cases: Array<[(e: Entry) => Entry, RegExp]> = [
    [at('/etc/steward/steward.json', { mode: 0o664 }), /steward\.json: mode 0664, expected 0644/],
    [at('/etc/steward/trusted-keys/web/k.pub', { uid: 990 }), /k\.pub: root reads it, but owner uid 990, expected root/],
    [at('/etc/steward/trusted-keys/web', { mode: 0o775 }), /trusted-keys\/web: root reads it, but mode 0775 is writable by group/],
    [at('/opt/steward/apps/web/versions/1.0.0/server.js', { mode: 0o446 }), /server\.js: .*writable by others/],
    [at('/opt/steward/apps/web/current', { uid: 990 }), /current: root reads it, but owner uid 990/],
    [at('/var/lib/steward/journal/web.json', { mode: 0o644 }), /journal\/web\.json: mode 0644, expected 0600/],
    [at('/var/lib/steward/journal', { mode: 0o755 }), /journal: mode 0755, expected 0700/],
    [at('/var/lib/steward/keys/helper.key', { mode: 0o644 }), /helper\.key: mode 0644, expected 0600/],
    [at('/var/lib/steward/receipts/web.json', { mode: 0o644 }), /receipts\/web\.json: mode 0644, expected 0640/],
    [at('/var/lib/steward/receipts', { gid: 0 }), /receipts: group gid 0, expected steward/],
    [at('/run/steward', { mode: 0o755 }), /\/run\/steward: mode 0755, expected 0750/],
    [at('/var/lib/steward-agent/node.key', { uid: 0 }), /node\.key: owner uid 0, expected steward/],
    [at('/var/lib/steward-agent', { mode: 0o755 }), /steward-agent: mode 0755, expected 0700/],
    [at('/etc/steward/steward.json', { type: 'symlink' }), /steward\.json: is a symlink, expected a file/],
  ];
  for (const [change, detail] of cases) {
    const failed = run(change).filter((x) => x.status === 'fail');
    assert.equal(failed.length, 1, `${detail}: ${JSON.stringify(failed)}`);
    assert.equal(failed[0]?.name, 'permissions');
    assert.match(failed[0]?.detail ?? '', detail);
  }
});

test('a capped or unreadable walk warns instead of claiming everything was checked', () => {
  const capped = checkPermissions(walkOf(healthy(), { capped: true, cap: 5 }), [], RULES, OWNERS);
  assert.deepEqual(capped.map((x) => x.status), ['warn']);
  assert.match(capped[0]?.detail ?? '', /stopped after 5 entries/);
  const unreadable = checkPermissions(walkOf(healthy(), { unreadable: [{ path: '/opt/steward/x', error: 'EACCES' }] }), [], RULES, OWNERS);
  assert.match(unreadable[0]?.detail ?? '', /\/opt\/steward\/x: could not be checked \(EACCES\)/);
});

test('a missing steward account fails in production; under a root prefix the current user stands in', () => {
  const missing = checkPermissions(walkOf(healthy()), [], RULES, { ...OWNERS, stewardUid: null, stewardGid: null, accountProblem: 'no user steward' });
  assert.deepEqual(missing.map((x) => x.status), ['fail']);
  const uid = 1000;
  const prefixed = healthy().map((e) => ({ ...e, uid, gid: uid }));
  const r = checkPermissions(walkOf(prefixed), [], RULES, { rootUid: uid, stewardUid: uid, stewardGid: null, note: 'under the root prefix /r the current user (uid 1000) stands in', accountProblem: '' });
  assert.deepEqual(r.map((x) => x.status), ['ok']);
  assert.match(r[0]?.detail ?? '', /stands in/);
});

test('a folder above the trees root reads, up to the root prefix, must be root-owned and not writable, even if sticky', () => {
  const check = (e: Entry) => checkPermissions(walkOf(healthy()), [], RULES, OWNERS, [dir('/', 0o755), e]);
  assert.deepEqual(check(dir('/opt', 0o755)).map((x) => x.status), ['ok']);
  const writable = check(dir('/var/lib', 0o775));
  assert.deepEqual(writable.map((x) => x.status), ['fail']);
  assert.match(writable[0]?.detail ?? '', /^\/var\/lib: a folder above what root reads, but mode 0775 is writable by group or others/);
  // The helper trusts nothing below a sticky, world-writable folder inside the prefix either.
  assert.match(check(dir('/var/lib', 0o1777)).map((x) => `${x.status} ${x.detail}`).join(), /^fail \/var\/lib: .*mode 1777 is writable by group or others/);
  assert.match(check(dir('/opt', 0o755, 1000)).map((x) => x.detail).join(), /\/opt: .*owner uid 1000, expected root/);
});

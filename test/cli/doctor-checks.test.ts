import { test } from 'node:test';
import assert from 'node:assert/strict';
import { passed, type CheckResult } from '../../src/core/doctor/check-result.js';
import {
  checkCaFiles,
  checkClock,
  checkConfig,
  checkControlPlanes,
  checkDisk,
  checkKeys,
  checkSockets,
  checkUnits,
  controlPlaneOf,
  DISK_FAIL_MARGIN_BYTES,
  GIB,
  MIB,
  SKEW_FAIL_MS,
  SKEW_WARN_MS,
  skewOf,
} from '../../src/core/doctor/host-checks.js';
import type { ConfigObservation, ControlPlaneProbe, ControlPlanesObservation, Entry, KeysObservation, Owners, SocketsObservation } from '../../src/core/doctor/observations.js';
import { formatChecks } from '../../src/cli/commands/doctor.js';

const PROD: Owners = { rootUid: 0, stewardUid: 990, stewardGid: 990, note: '', accountProblem: '' };
const statuses = (rs: CheckResult[]) => rs.map((r) => `${r.status} ${r.name}`);

test('clock skew: ok up to 1 min, warn up to 5 min, fail beyond, either direction', () => {
  const cases: Array<[number, string]> = [
    [0, 'ok'],
    [SKEW_WARN_MS, 'ok'],
    [SKEW_WARN_MS + 1, 'warn'],
    [-(SKEW_WARN_MS + 1), 'warn'],
    [SKEW_FAIL_MS, 'warn'],
    [SKEW_FAIL_MS + 1, 'fail'],
    [-10 * 60_000, 'fail'],
  ];
  for (const [skewMs, want] of cases) {
    const [, skew] = checkClock({ state: 'synced' }, { state: 'measured', url: 'http://127.0.0.1:1', skewMs });
    assert.equal(skew?.status, want, `skew ${skewMs} ms`);
    assert.match(skew?.detail ?? '', /127\.0\.0\.1/);
  }
});

test('the control planes checked are the host config ones, else the list the node enrolled with, else its one enrolled URL, else none', () => {
  const file = '/a/enrollment.json';
  const listFile = '/a/control-plane.json';
  const noList = { controlPlaneFile: listFile, controlPlane: { state: 'missing' } } as const;
  const enrolled = { enrollmentFile: file, enrollment: { state: 'ok', nodeId: 'n1', controlPlaneUrl: 'https://enrolled.example/' }, ...noList } as const;
  const none = { enrollmentFile: file, enrollment: { state: 'missing' }, ...noList } as const;
  const listed = { ...enrolled, controlPlane: { state: 'ok', urls: ['https://a.example/', 'https://b.example/'] } } as const;
  const cfg = (controlPlane: { url: string | string[]; caFile?: string } | null): ConfigObservation => ({ ok: true, file: '/c', apps: [], controlPlane, caFiles: [], diskReserveBytes: 0 });
  const broken: ConfigObservation = { ok: false, file: '/c', error: 'bad' };
  type Keys = Pick<KeysObservation, 'enrollment' | 'enrollmentFile' | 'controlPlane' | 'controlPlaneFile'>;
  const cases: Array<[ConfigObservation, Keys, ReturnType<typeof controlPlaneOf>]> = [
    [cfg({ url: 'https://config.example', caFile: '/ca.pem' }), listed, { settings: { urls: ['https://config.example'], caFile: '/ca.pem' } }],
    [cfg({ url: ['https://c1.example', 'https://c2.example'] }), enrolled, { settings: { urls: ['https://c1.example', 'https://c2.example'] } }],
    [cfg(null), enrolled, { settings: { urls: ['https://enrolled.example/'] }, from: file }],
    [cfg(null), listed, { settings: { urls: ['https://a.example/', 'https://b.example/'] }, from: listFile }],
    [cfg(null), { ...enrolled, controlPlane: { state: 'invalid', error: 'newer' } }, { settings: { urls: ['https://enrolled.example/'] }, from: file }],
    [broken, enrolled, { settings: { urls: ['https://enrolled.example/'] }, from: file }],
    [cfg(null), none, null],
    [cfg(null), { ...none, enrollment: { state: 'invalid', error: 'bad json' } }, null],
  ];
  for (const [config, keys, want] of cases) assert.deepEqual(controlPlaneOf(config, keys), want, JSON.stringify([config, keys]));
  const [, skew] = checkClock({ state: 'synced' }, { state: 'measured', url: 'https://enrolled.example/', skewMs: 0, from: file });
  assert.match(skew?.detail ?? '', /the control plane https:\/\/enrolled\.example\/ \(enrolled in \/a\/enrollment\.json\)/);
});

test('control plane: ok when every URL answers below 500, warn when some do not, fail only when none does', () => {
  const up = (url: string, status = 405): ControlPlaneProbe => ({ state: 'measured', url, skewMs: 0, status });
  const refused = (url: string): ControlPlaneProbe => ({ state: 'unreachable', url, why: 'connect ECONNREFUSED' });
  const probed = (...probes: ControlPlaneProbe[]): Extract<ControlPlanesObservation, { state: 'probed' }> => ({ state: 'probed', probes });
  const cases: Array<[ControlPlanesObservation, string, RegExp]> = [
    [{ state: 'none' }, 'ok', /none configured/],
    [probed(up('https://a')), 'ok', /https:\/\/a answers \(HTTP 405\)/],
    [probed(up('https://a'), up('https://b', 401)), 'ok', /https:\/\/b answers \(HTTP 401\)/],
    [probed(refused('https://a'), up('https://b')), 'warn', /1 of 2 control plane URLs do not answer: https:\/\/a: connect ECONNREFUSED; https:\/\/b answers/],
    [probed(up('https://a', 503), up('https://b')), 'warn', /https:\/\/a: HTTP 503/],
    [probed({ state: 'unreachable', url: 'https://a', why: 'HTTP 405 without a valid Date header', status: 405 }), 'ok', /https:\/\/a answers \(HTTP 405\)/],
    [probed(refused('https://a')), 'fail', /the control plane does not answer: https:\/\/a: connect ECONNREFUSED/],
    [probed(refused('https://a'), up('https://b', 502)), 'fail', /none of the 2 control plane URLs answers/],
    [{ ...probed(up('https://a')), recordError: '/a/control-plane.json: schemaVersion 2 is newer' }, 'warn', /schemaVersion 2 is newer \(the agent ignores it\)/],
  ];
  for (const [obs, status, detail] of cases) {
    const r = checkControlPlanes(obs);
    assert.equal(r.name, 'control plane');
    assert.equal(r.status, status, JSON.stringify(obs));
    assert.match(r.detail, detail);
  }
  const on = checkControlPlanes({ state: 'probed', probes: [up('https://a'), up('https://b')], answered: { url: 'https://b/', since: Date.parse('2030-01-01T00:00:00Z') } });
  assert.match(on.detail, /the agent is on https:\/\/b\/, the last URL that answered it \(since 2030-01-01T00:00:00\.000Z\)/);
});

test('the clock is judged by the URL the agent is on, else the first that answered with a time', () => {
  const at = (url: string, skewMs: number): ControlPlaneProbe => ({ state: 'measured', url, skewMs, status: 405 });
  const down: ControlPlaneProbe = { state: 'unreachable', url: 'https://a', why: 'ECONNREFUSED' };
  assert.deepEqual(skewOf({ state: 'none' }), { state: 'no-control-plane' });
  assert.equal((skewOf({ state: 'probed', probes: [down, at('https://b', 7), at('https://c', 9)] }) as { url: string }).url, 'https://b');
  assert.equal((skewOf({ state: 'probed', probes: [{ ...at('https://b', 7), status: 503 }, at('https://c', 9)] }) as { url: string }).url, 'https://c', 'a 5xx gives a time only when no URL answers');
  assert.equal((skewOf({ state: 'probed', probes: [at('https://b', 7), at('https://c', 9)], answered: { url: 'https://c/', since: 1 } }) as { url: string }).url, 'https://c');
  assert.deepEqual(skewOf({ state: 'probed', probes: [down], from: '/a/enrollment.json' }), { ...down, from: '/a/enrollment.json' });
});

test('clock: an unsynchronized clock, a missing timedatectl and an unreachable control plane warn', () => {
  assert.deepEqual(statuses(checkClock({ state: 'not-synced' }, { state: 'no-control-plane' })), ['warn clock ntp', 'ok clock skew']);
  const r = checkClock({ state: 'unavailable', why: 'timedatectl is not installed' }, { state: 'unreachable', url: 'https://cp', why: 'ECONNREFUSED' });
  assert.deepEqual(statuses(r), ['warn clock ntp', 'warn clock skew']);
  assert.match(r[1]?.detail ?? '', /ECONNREFUSED/);
});

test('disk: fail below the reserve plus 100 MiB, warn below 1 GiB or 10 %, else ok', () => {
  const reserve = 10 * MIB;
  const at = (freeBytes: number, totalBytes = 1000 * GIB) => checkDisk({ label: '/opt/steward', dir: '/opt/steward', space: { ok: true, freeBytes, totalBytes } }, reserve).status;
  assert.equal(at(reserve + DISK_FAIL_MARGIN_BYTES - 1), 'fail');
  assert.equal(at(reserve + DISK_FAIL_MARGIN_BYTES), 'warn');
  assert.equal(at(GIB - 1, 2 * GIB), 'warn');
  assert.equal(at(GIB, 10 * GIB), 'ok');
  assert.equal(at(99 * GIB, 1000 * GIB), 'warn', 'below 10 %');
  assert.equal(at(100 * GIB, 1000 * GIB), 'ok');
  assert.equal(checkDisk({ label: '/opt/steward', dir: '/x', space: { ok: false, error: 'EACCES' } }, reserve).status, 'warn');
});

test('units: active is ok, an inactive helper fails, an inactive agent only warns before enrollment', () => {
  const units = (helper: string, agent: string) => ({ kind: 'observed' as const, units: [{ name: 'steward-helper.service', activeState: helper }, { name: 'steward-agent.service', activeState: agent }] });
  assert.deepEqual(statuses(checkUnits(units('active', 'active'), true)), ['ok unit steward-helper.service', 'ok unit steward-agent.service']);
  assert.deepEqual(statuses(checkUnits(units('failed', 'inactive'), false)), ['fail unit steward-helper.service', 'warn unit steward-agent.service']);
  assert.deepEqual(statuses(checkUnits(units('active', 'inactive'), true)), ['ok unit steward-helper.service', 'fail unit steward-agent.service']);
  assert.deepEqual(statuses(checkUnits({ kind: 'no-systemd', why: 'PID 1 is not systemd' }, true)), ['warn units']);
  assert.deepEqual(statuses(checkUnits({ kind: 'skipped', why: 'root prefix' }, true)), ['warn units']);
});

const sock = (path: string, mode: number, gid = 990): Entry => ({ path, type: 'socket', uid: 0, gid, mode });
const sockets = (over: Partial<SocketsObservation> = {}): SocketsObservation => ({
  helperSock: sock('/run/steward/helper.sock', 0o660),
  adminSock: sock('/run/steward/admin.sock', 0o600, 0),
  status: { ok: true, socket: '/run/steward/admin.sock', pid: 42, recovering: false },
  ...over,
});
const files = { helperSock: '/run/steward/helper.sock', adminSock: '/run/steward/admin.sock' };

test('sockets: modes, the steward group, existence and a status answer are each checked', () => {
  assert.ok(passed(checkSockets(sockets(), files, PROD)));
  const cases: Array<[Partial<SocketsObservation>, string, RegExp]> = [
    [{ helperSock: sock('/run/steward/helper.sock', 0o666) }, 'helper.sock', /mode 0666, expected 0660/],
    [{ helperSock: sock('/run/steward/helper.sock', 0o660, 0) }, 'helper.sock', /group gid 0, expected steward/],
    [{ adminSock: sock('/run/steward/admin.sock', 0o660) }, 'admin.sock', /mode 0660, expected 0600/],
    [{ adminSock: null }, 'admin.sock', /does not exist/],
    [{ status: { ok: false, error: 'ECONNREFUSED' } }, 'helper status', /ECONNREFUSED/],
  ];
  for (const [over, name, detail] of cases) {
    const failed = checkSockets(sockets(over), files, PROD).filter((r) => r.status === 'fail');
    assert.deepEqual(failed.map((r) => r.name), [name]);
    assert.match(failed[0]?.detail ?? '', detail);
  }
  // Under a root prefix without the steward group, the group is not checked.
  assert.ok(passed(checkSockets(sockets({ helperSock: sock('/r/helper.sock', 0o660, 0) }), files, { ...PROD, stewardGid: null })));
});

test("steward version: the helper running an older steward than the package (its trial reverted), or a fallback, fails; the package's version passes", () => {
  const withSelf = (self: NonNullable<Extract<SocketsObservation['status'], { ok: true }>['self']>) =>
    checkSockets(sockets({ status: { ok: true, socket: '/run/steward/admin.sock', pid: 42, recovering: false, self } }), files, PROD).find((r) => r.name === 'steward version');
  assert.deepEqual(withSelf({ version: '1.1.0', decision: 'trial', fallback: null, packageReverted: null }), { name: 'steward version', status: 'ok', detail: 'steward-helper runs steward 1.1.0 (trial)' });
  const reverted = withSelf({ version: '1.0.5', decision: 'current', fallback: null, packageReverted: "the package's steward 1.1.0 was tried and REVERTED: steward 1.0.5 runs" });
  assert.deepEqual([reverted?.status, reverted?.detail], ['fail', "the package's steward 1.1.0 was tried and REVERTED: steward 1.0.5 runs"]);
  assert.equal(withSelf({ version: '1.0.0', decision: 'fallback', fallback: 'steward 2.0.0 never got ready 3 starts in a row', packageReverted: null })?.status, 'fail');
  assert.equal(checkSockets(sockets(), files, PROD).find((r) => r.name === 'steward version'), undefined, 'no app steward, no check');
});

const keys = (over: Partial<KeysObservation> = {}): KeysObservation => ({
  helperKeyFile: '/k/helper.key',
  helperPubFile: '/k/helper.pub',
  helperKey: { state: 'ok', rawPublicKey: 'aa' },
  helperPub: { state: 'ok', rawPublicKey: 'aa' },
  trustedKeys: [{ file: '/t/web/a.pub', error: null }],
  nodeStateFile: '/s/node.json',
  enrollmentFile: '/a/enrollment.json',
  nodeState: { state: 'ok', nodeId: 'n1' },
  enrollment: { state: 'ok', nodeId: 'n1', controlPlaneUrl: 'https://cp.example/' },
  controlPlaneFile: '/a/control-plane.json',
  controlPlane: { state: 'missing' },
  ...over,
});

test('keys: a matching pair, parsing trusted keys and an agreeing enrollment are ok', () => {
  assert.deepEqual(statuses(checkKeys(keys())), ['ok helper key', 'ok trusted keys', 'ok enrollment']);
});

test('keys: each broken piece fails its own line naming the file', () => {
  const cases: Array<[Partial<KeysObservation>, string, RegExp]> = [
    [{ helperKey: { state: 'missing' } }, 'helper key', /helper\.key does not exist/],
    [{ helperKey: { state: 'invalid', error: 'not an Ed25519 private key' } }, 'helper key', /helper\.key: not an Ed25519/],
    [{ helperPub: { state: 'ok', rawPublicKey: 'bb' } }, 'helper key', /helper\.pub does not match/],
    [{ helperPub: { state: 'missing' } }, 'helper key', /helper\.pub does not exist/],
    [{ trustedKeys: [{ file: '/t/web/bad.pub', error: 'not a key' }] }, 'trusted keys', /\/t\/web\/bad\.pub: not a key/],
    [{ enrollment: { state: 'ok', nodeId: 'n2', controlPlaneUrl: 'https://cp.example/' } }, 'enrollment', /n1 .* n2/],
    [{ enrollment: { state: 'missing' } }, 'enrollment', /enrollment\.json does not exist/],
    [{ nodeState: { state: 'invalid', error: 'bad json' } }, 'enrollment', /node\.json: bad json/],
  ];
  for (const [over, name, detail] of cases) {
    const failed = checkKeys(keys(over)).filter((r) => r.status === 'fail');
    assert.deepEqual(failed.map((r) => r.name), [name], JSON.stringify(over));
    assert.match(failed[0]?.detail ?? '', detail);
  }
});

test('keys: not enrolled and no trusted keys are warnings', () => {
  const r = checkKeys(keys({ nodeState: { state: 'missing' }, enrollment: { state: 'missing' }, trustedKeys: [] }));
  assert.deepEqual(statuses(r), ['ok helper key', 'warn trusted keys', 'warn enrollment']);
});

test('keys: no trusted keys on a host that trusts a TUF root is fine: the agent\'s updates, steward\'s own among them, need none', () => {
  const r = checkKeys(keys({ trustedKeys: [], tufRoot: true }));
  assert.deepEqual(statuses(r), ['ok helper key', 'ok trusted keys', 'ok enrollment']);
  assert.match(r.find((x) => x.name === 'trusted keys')?.detail ?? '', /TUF root/);
});

test('config: loads with apps is ok, without apps warns, an error fails with its message', () => {
  const base = { file: '/etc/steward/steward.json', controlPlane: null, caFiles: [], diskReserveBytes: 0 };
  assert.equal(checkConfig({ ok: true, ...base, apps: [{ name: 'web', runner: 'process' }] }).status, 'ok');
  assert.equal(checkConfig({ ok: true, ...base, apps: [] }).status, 'warn');
  const r = checkConfig({ ok: false, file: base.file, error: '/etc/steward/steward.json: apps.web.user: no user named web' });
  assert.equal(r.status, 'fail');
  assert.match(r.detail, /no user named web/);
});

test('ca file: one line per CA file the config names; missing or untrusted fails naming the file and the flaw', () => {
  assert.deepEqual(checkCaFiles([]), []);
  const r = checkCaFiles([
    { setting: 'fetch.caFile', file: '/etc/steward/ca.pem', state: 'ok' },
    { setting: 'controlPlane.caFile', file: '/etc/steward/cp.pem', state: 'untrusted', why: '/etc/steward/cp.pem is writable by group or others (mode 664)' },
    { setting: 'fetch.caFile', file: '/gone.pem', state: 'missing' },
  ]);
  assert.deepEqual(statuses(r), ['ok ca file', 'fail ca file', 'fail ca file']);
  assert.match(r[1]?.detail ?? '', /controlPlane\.caFile \/etc\/steward\/cp\.pem is not trusted: .*mode 664/);
  assert.match(r[2]?.detail ?? '', /\/gone\.pem does not exist/);
});

test('the human output is one line per check: status, padded name, detail', () => {
  const text = formatChecks([
    { name: 'config', status: 'ok', detail: 'fine' },
    { name: 'clock skew', status: 'fail', detail: 'two\nlines' },
  ]);
  assert.equal(text, 'ok    config      fine\nfail  clock skew  two lines\n');
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkStatus } from '../../src/cli/status-check.js';
import type { AppStatus, StatusResult } from '../../src/protocol/answers.js';

const fine: AppStatus = {
  name: 'web',
  runner: 'process',
  current: '1.0.0',
  currentState: 'valid',
  previous: null,
  highestActive: '1.0.0',
  hold: null,
  blocked: null,
  quarantined: [],
  running: null,
  lastAttempt: null,
  supervisor: { expected: 'running', state: 'running', pid: 42, version: '1.0.0', attempts: 0, nextAttemptAt: null, lastExit: null, giveUpReason: null, since: 0 },
};
const result = (...apps: Array<Partial<AppStatus>>): StatusResult => ({ root: '/', pid: 1, startedAt: 0, recovering: false, apps: apps.map((a) => ({ ...fine, ...a })) });
const hold = { by: 'alice (uid 1001) over admin.sock', at: 0, reason: 'stop' };

test('status --check: 0 when all is well, 1 when an app is broken, else 3 when one is held', () => {
  const cases: Array<[string, StatusResult, number, RegExp[]]> = [
    ['running', result({}), 0, []],
    ['no apps', result(), 0, []],
    ['a crashed app waiting for its respawn', result({ supervisor: { ...fine.supervisor!, state: 'waiting' } }), 0, []],
    ['a quarantined version', result({ quarantined: ['2.0.0'] }), 0, []],
    ['held', result({ hold }), 3, [/^web: held by alice \(uid 1001\) over admin\.sock since .* \(stop\), until release-hold$/]],
    ['held with an expiry', result({ hold: { ...hold, reason: 'freeze', until: 1_800_000_000_000 } }), 3, [/^web: held by alice \(uid 1001\) over admin\.sock since .* \(freeze\), until 2027-01-15T08:00:00Z$/]],
    ['error', result({ supervisor: { ...fine.supervisor!, state: 'error', giveUpReason: '5 respawns' } }), 1, [/^web: ERROR: the supervisor gave up \(5 respawns\)$/]],
    ['blocked', result({ blocked: { reason: 'DISK_FULL', since: 0 } }), 1, [/^web: BLOCKED DISK_FULL since/]],
    ['invalid current', result({ currentState: 'invalid' }), 1, [/current is not a valid release/]],
    ['state error', result({ stateError: 'bad json' }), 1, [/state error: bad json/]],
    ['journal error', result({ journalError: 'newer' }), 1, [/journal error: newer/]],
    ['failed unit', result({ runner: 'unit', supervisor: null, unit: { name: 'a.service', activeState: 'failed', subState: 'failed', mainPid: 0, nRestarts: 3 } }), 1, [/unit a\.service failed/]],
    ['unreadable unit', result({ runner: 'unit', supervisor: null, unit: { name: 'a.service', error: 'no systemctl' } }), 1, [/unit a\.service: no systemctl/]],
    ['broken and held: broken wins, both named', result({ name: 'api', hold }, { blocked: { reason: 'JOURNAL_INVALID', since: 0 } }), 1, [/^web: BLOCKED/, /^api: held/]],
  ];
  for (const [what, r, exit, problems] of cases) {
    const v = checkStatus(r);
    assert.equal(v.exit, exit, what);
    assert.equal(v.problems.length, problems.length, `${what}: ${v.problems.join('; ')}`);
    problems.forEach((re, i) => assert.match(v.problems[i] ?? '', re, what));
  }
});

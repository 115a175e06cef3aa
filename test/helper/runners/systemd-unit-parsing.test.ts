import { test } from 'node:test';
import assert from 'node:assert/strict';
import { holdsInstance, parseAppUnit, parseExitLine, parseJournalExit, systemdRunArgs } from '../../../src/helper/runners/systemd-runner.js';
import { parseUnitShow } from '../../../src/helper/runners/unit-runner.js';
import type { StartSpec } from '../../../src/helper/runners/runner.js';

// The text systemd hands back (cgroup paths, `systemctl show`, systemd-run's last lines) and
// the systemd-run command line, checked without a systemd.

const spec: StartSpec = {
  app: 'web',
  version: '1.2.3',
  cwd: '/opt/steward/apps/web/versions/1.2.3',
  command: ['/usr/bin/node', 'server.js', '--home=$HOME', '100%'],
  env: { GREETING: 'a "b" $c %d' },
  runAs: { name: 'web', uid: 990, gid: 991, home: '/home/web' },
  logFile: '/var/log/steward/web.log',
  stateDir: '/var/lib/steward-apps/web',
  instance: '0123456789abcdef0123456789abcdef',
};

test('the unit of a process is read from the v2 line of its cgroup file, else the name=systemd line', () => {
  assert.deepEqual(parseAppUnit('0::/system.slice/steward-app-web.service\n'), {
    unit: 'steward-app-web.service',
    cgroup: '/system.slice/steward-app-web.service',
  });
  assert.deepEqual(parseAppUnit('9:name=systemd:/system.slice/steward-app-a_b-c.service\n1:cpu:/\n0::/\n'), {
    unit: 'steward-app-a_b-c.service',
    cgroup: '/system.slice/steward-app-a_b-c.service',
  });
  assert.equal(parseAppUnit('0::/system.slice/sshd.service\n'), null);
  assert.equal(parseAppUnit('0::/system.slice/steward-app-web.service/child\n'), null, 'only the last path segment counts');
  assert.equal(
    parseAppUnit('0::/user.slice/user-1000.slice/user@1000.service/app.slice/steward-app-web.service\n')?.cgroup,
    '/user.slice/user-1000.slice/user@1000.service/app.slice/steward-app-web.service',
    "a user's unit of the same name keeps its full path, which stop() compares with the system unit's",
  );
  assert.equal(parseAppUnit('4:memory:/system.slice/steward-app-web.service\n0::/init.scope\n'), null, 'other v1 controllers do not count');
  assert.equal(
    parseAppUnit('9:name=systemd:/system.slice/steward-app-web.service\n0::/fake.slice/other.service\n'),
    null,
    'in a hybrid layout the v2 line is the one systemd tracks',
  );
  assert.equal(parseAppUnit('0::/system.slice/steward-app-Web.service\n'), null, 'not an app name');
});

test('systemctl show output is parsed in any order, with missing numbers as 0', () => {
  assert.deepEqual(
    parseUnitShow('MainPID=42\nNRestarts=3\nActiveState=active\nSubState=running\nLoadState=loaded\nControlGroup=/system.slice/x.service\n'),
    { loadState: 'loaded', activeState: 'active', subState: 'running', mainPid: 42, nRestarts: 3, controlGroup: '/system.slice/x.service' },
  );
  assert.deepEqual(parseUnitShow('LoadState=not-found\nActiveState=inactive\nSubState=dead\nMainPID=0\nNRestarts=[not set]\n'), {
    loadState: 'not-found',
    activeState: 'inactive',
    subState: 'dead',
    mainPid: 0,
    nRestarts: 0,
    controlGroup: '',
  });
});

test("systemd-run's last lines give the exit code or the signal", () => {
  const tail = (s: string) => `Running as unit: steward-app-web.service\nFinished with result: x\nMain processes terminated with: ${s}\nService runtime: 5ms\n`;
  assert.deepEqual(parseExitLine(tail('code=exited/status=3')), { code: 3, signal: null });
  assert.deepEqual(parseExitLine(tail('code=killed/status=TERM')), { code: null, signal: 'SIGTERM' });
  assert.deepEqual(parseExitLine(tail('code=dumped/status=SEGV')), { code: null, signal: 'SIGSEGV' });
  assert.equal(parseExitLine('Running as unit: steward-app-web.service\n'), null, 'a killed client says nothing of the app');
});

test("systemd-run's \"Finished with result: oom-kill\" names the exit OOM, and no other result does", () => {
  const tail = (result: string, how: string) => `Running as unit: steward-app-web.service\nFinished with result: ${result}\nMain processes terminated with: ${how}\nService runtime: 5ms\n`;
  assert.deepEqual(parseExitLine(tail('oom-kill', 'code=killed/status=KILL')), { code: null, signal: 'SIGKILL', reason: 'OOM' });
  // OOMPolicy=stop: a child killed by the OOM killer stops the unit, whose main process gets SIGTERM.
  assert.deepEqual(parseExitLine(tail('oom-kill', 'code=killed/status=TERM')), { code: null, signal: 'SIGTERM', reason: 'OOM' });
  assert.deepEqual(parseExitLine(tail('signal', 'code=killed/status=KILL')), { code: null, signal: 'SIGKILL' }, 'a kill -9 by someone');
  assert.deepEqual(parseExitLine(tail('exit-code', 'code=exited/status=137')), { code: 137, signal: null });
});

test("the journal's \"Failed with result 'oom-kill'\" after the last exit line names that exit OOM", () => {
  const oom = ["steward-app-web.service: A process of this unit has been killed by the OOM killer.", 'steward-app-web.service: Main process exited, code=killed, status=9/KILL', "steward-app-web.service: Failed with result 'oom-kill'.", ''].join('\n');
  assert.deepEqual(parseJournalExit(oom), { code: null, signal: 'SIGKILL', reason: 'OOM' });
  const later = [oom, 'steward-app-web.service: Main process exited, code=killed, status=9/KILL', "steward-app-web.service: Failed with result 'signal'.", ''].join('\n');
  assert.deepEqual(parseJournalExit(later), { code: null, signal: 'SIGKILL' }, 'an earlier run\'s OOM is not this exit\'s');
});

test("systemd's journal line about the unit's main process gives its exit when the client said nothing", () => {
  const journal = [
    'listening 8080 version 2.0.0',
    'steward-app-web.service: Main process exited, code=exited, status=1/FAILURE',
    'steward-app-web.service: Failed with result \'exit-code\'.',
    'listening 8080 version 2.0.0',
    'steward-app-web.service: Main process exited, code=exited, status=3/NOTIMPLEMENTED',
    'steward-app-web.service: Failed with result \'exit-code\'.',
    '',
  ].join('\n');
  assert.deepEqual(parseJournalExit(journal), { code: 3, signal: null }, 'the last one');
  assert.deepEqual(parseJournalExit('steward-app-web.service: Main process exited, code=killed, status=9/KILL\n'), { code: null, signal: 'SIGKILL' });
  assert.deepEqual(parseJournalExit('steward-app-web.service: Main process exited, code=dumped, status=11/SEGV\n'), { code: null, signal: 'SIGSEGV' });
  assert.equal(parseJournalExit('listening 8080 version 2.0.0\n'), null);
  assert.equal(parseJournalExit('an app saying Main process exited, code=exited, status=0 mid-line\n'), null, 'only a whole line of the form');
});

test('the systemd-run command line names the unit, the user and the release, and passes the environment verbatim', () => {
  const args = systemdRunArgs(spec, 'steward-app-web.service', 10_000);
  const sep = args.indexOf('--');
  const opts = args.slice(0, sep);
  for (const a of ['--wait', '--collect', '--unit=steward-app-web', '--service-type=exec']) assert.ok(opts.includes(a), a);
  const props = opts.filter((_, i) => opts[i - 1] === '-p');
  for (const p of [
    'User=web',
    'Group=991',
    'WorkingDirectory=/opt/steward/apps/web/versions/1.2.3',
    'KillMode=mixed',
    'TimeoutStopSec=10s',
    'StandardOutput=journal',
    'StandardError=journal',
  ]) {
    assert.ok(props.includes(p), p);
  }
  const env = opts.filter((a) => a.startsWith('--setenv=')).map((a) => a.slice('--setenv='.length));
  assert.ok(env.includes('GREETING=a "b" $c %d'), 'a value goes as written');
  assert.ok(env.includes('PATH=/usr/local/bin:/usr/bin:/bin'));
  assert.ok(env.includes('STEWARD_APP=web'));
  assert.ok(env.includes('HOME=/home/web'));
  assert.ok(!env.some((e) => e.startsWith('NODE_') || e.startsWith('DEBUG=')), "nothing of the helper's environment");
  // systemd turns $$ back into $ in ExecStart arguments.
  assert.deepEqual(args.slice(sep + 1), ['/usr/bin/node', 'server.js', '--home=$$HOME', '100%']);
});

test('memoryMax becomes the unit\'s MemoryMax= in bytes, and no limit none', () => {
  const props = (s: StartSpec) => systemdRunArgs(s, 'steward-app-web.service', 10_000).filter((a, i, all) => all[i - 1] === '-p' && a.startsWith('Memory'));
  assert.deepEqual(props({ ...spec, memoryMax: 512 * 1024 * 1024 }), ['MemoryMax=536870912']);
  assert.deepEqual(props(spec), []);
});

test('an empty command, or a "$" in the program name, is refused', () => {
  assert.throws(() => systemdRunArgs({ ...spec, command: [] }, 'steward-app-web.service', 1000), { code: 'RELEASE_INVALID' });
  assert.throws(() => systemdRunArgs({ ...spec, command: ['/opt/$x/run'] }, 'steward-app-web.service', 1000), { code: 'RELEASE_INVALID' });
});

test("a unit's Environment= holds the instance token only as a whole assignment", () => {
  const token = spec.instance;
  assert.equal(holdsInstance(`PATH=/usr/bin HOME=/home/web STEWARD_INSTANCE=${token}`, token), true);
  assert.equal(holdsInstance(`STEWARD_INSTANCE=${token} "ODD=a b"`, token), true);
  assert.equal(holdsInstance(`OTHER=STEWARD_INSTANCE=${token}`, token), false, 'inside another value');
  assert.equal(holdsInstance(`STEWARD_INSTANCE=${token}0`, token), false, 'a longer value');
  assert.equal(holdsInstance(`STEWARD_INSTANCE=${token}`, null), false, 'no recorded token');
  assert.equal(holdsInstance('STEWARD_INSTANCE=', ''), false);
  assert.equal(holdsInstance('STEWARD_INSTANCE=x', 'x'), false, 'not a token');
});

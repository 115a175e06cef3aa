import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  envAssignment,
  execWord,
  holderUnitText,
  parseExitFile,
  plainValue,
  sideDropInText,
  socketUnitNames,
  socketUnitText,
  templateUnitText,
  type SideSettings,
} from '../../../src/helper/runners/socket-unit-files.js';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseShowBlocks, parseSideExit, socketWhy, writeIfChanged } from '../../../src/helper/runners/systemd-socket-sides.js';
import { parseAppUnit } from '../../../src/helper/runners/systemd-runner.js';

// The unit files of an app with sockets under systemd (socket-unit-files.ts), checked without a
// systemd: every value is hostile, and must either read back as written by systemd's rules
// (specifiers, then C unquoting, then $ variables) or be refused. The container suite
// (e2e/systemd/socket-handover-under-systemd) checks the same values through a real systemd 252.

// systemd's reading of one ExecStart= or Environment= value (load-fragment.c): specifiers first
// ('%%' is '%'; any other is a specifier, which steward never means), then words split on
// whitespace, double quotes removed and C escapes read, then (ExecStart only) '$$' is '$' and
// '$NAME' or '${NAME}' a variable, which steward never means either.
function readWords(line: string, variables: boolean): string[] {
  const spec = line.replace(/%(.)/gs, (_, c: string) => {
    if (c === '%') return '%';
    throw new Error(`a specifier %${c} in ${line}`);
  });
  const words: string[] = [];
  let i = 0;
  while (i < spec.length) {
    if (spec[i] === ' ') {
      i++;
      continue;
    }
    assert.equal(spec[i], '"', `every word is quoted: ${spec.slice(i, i + 20)}`);
    i++;
    let w = '';
    for (;;) {
      const c = spec[i++];
      if (c === undefined) throw new Error('an unterminated quote');
      if (c === '"') break;
      if (c !== '\\') {
        w += c;
        continue;
      }
      const e = spec[i++];
      if (e === 'n') w += '\n';
      else if (e === 't') w += '\t';
      else if (e === 'x') {
        w += String.fromCharCode(parseInt(spec.slice(i, i + 2), 16));
        i += 2;
      } else if (e === '\\' || e === '"') w += e;
      else throw new Error(`an escape \\${e} steward does not write`);
    }
    words.push(w);
  }
  if (!variables) return words;
  return words.map((w) =>
    w.replace(/\$(\$|\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)?/g, (m, v: string | undefined) => {
      if (v === '$') return '$';
      if (v === undefined) return '$';
      throw new Error(`a variable ${m} in ${w}`);
    }),
  );
}

const HOSTILE = [
  '$HOME',
  '${USER}',
  '$$X',
  '$',
  '%n',
  '%%',
  '%',
  'a b',
  ';',
  '\\;',
  '"q"',
  "'s'",
  'new\nline',
  'cr\rx',
  'tab\there',
  '\\',
  'ends\\',
  '-x',
  '@x',
  '+x',
  '\x01\x1f\x7f',
  'ünï ✓',
  '',
  ' lead and trail ',
  '#comment',
  '[Service]',
];

test('every argument of ExecStart= reads back as written, in one line, whatever it holds', () => {
  const line = HOSTILE.map(execWord).join(' ');
  assert.doesNotMatch(line, /[\n\r\0]/, 'one line');
  assert.deepEqual(readWords(line, true), HOSTILE);
});

test('every Environment= assignment reads back as written, and a name that is no variable name or a NUL is refused', () => {
  const s = { app: 'web', version: '1.0.0' };
  for (const v of HOSTILE) {
    const a = envAssignment('ODD', v, s);
    assert.doesNotMatch(a, /[\n\r\0]/);
    // No $ expansion in Environment=: '$' stays as it is.
    assert.deepEqual(readWords(a, false), [`ODD=${v}`]);
  }
  assert.throws(() => envAssignment('A B', 'x', s), (e: { code?: string }) => e.code === 'RELEASE_INVALID');
  assert.throws(() => envAssignment('A=B', 'x', s), /not a variable name/);
  assert.throws(() => envAssignment('A\nB', 'x', s), /not a variable name/);
  assert.throws(() => envAssignment('A', 'x\0y', s), /NUL/);
  assert.throws(() => execWord('\ud800'), /well-formed/);
});

test('a value read to the end of its line doubles % and refuses what systemd would read otherwise', () => {
  assert.equal(plainValue('CONFIG_INVALID', 'x', '/run/a %n $HOME "q"/s'), '/run/a %%n $HOME "q"/s');
  for (const bad of ['a\nb', 'a\rb', 'tab\t', ' lead', 'trail ', 'ends\\', '', '\x01', '\ud800']) {
    assert.throws(() => plainValue('CONFIG_INVALID', 'x', bad), (e: { code?: string }) => e.code === 'CONFIG_INVALID', JSON.stringify(bad));
  }
});

test('the units are named after the app, with a hash of a root prefix so that two hosts on one machine never share one', () => {
  const decls = [{ name: 'http', listen: '127.0.0.1:8080' }, { name: 'a.b-c_d', listen: '/run/web.sock' }];
  assert.deepEqual(socketUnitNames('web', '', decls), {
    base: 'steward-app-web',
    template: 'steward-app-web@.service',
    sides: { a: 'steward-app-web@a.service', b: 'steward-app-web@b.service' },
    holder: 'steward-app-web.hold.service',
    sockets: ['steward-app-web@http.socket', 'steward-app-web@a.b-c_d.socket'],
  });
  const hash = createHash('sha256').update('/tmp/h1').digest('hex').slice(0, 16);
  assert.equal(socketUnitNames('web', '/tmp/h1', decls).base, `steward-app-web.${hash}`);
  assert.notEqual(socketUnitNames('web', '/tmp/h1', decls).base, socketUnitNames('web', '/tmp/h2', decls).base);
  // '.' and '@' are in no app name: app "web-hold" never meets app "web"'s holder.
  assert.notEqual(socketUnitNames('web-hold', '', decls).base, socketUnitNames('web', '', decls).holder.replace(/\.service$/, ''));
  assert.throws(() => socketUnitNames('Web', '', decls), /not an app name/);
  assert.throws(() => socketUnitNames('web', '', [{ name: 'a b', listen: '127.0.0.1:1' }]), /not a socket name/);
  assert.throws(() => socketUnitNames('web', '', [{ name: 'a:b', listen: '127.0.0.1:1' }]), /not a socket name/);
});

test('the side units are found in a cgroup path as the transient units are', () => {
  assert.deepEqual(parseAppUnit('0::/system.slice/system-steward\\x2dapp\\x2dweb.slice/steward-app-web@b.service\n'), {
    unit: 'steward-app-web@b.service',
    cgroup: '/system.slice/system-steward\\x2dapp\\x2dweb.slice/steward-app-web@b.service',
  });
  assert.equal(parseAppUnit('0::/system.slice/x.slice/steward-app-web.0123456789abcdef@a.service\n')?.unit, 'steward-app-web.0123456789abcdef@a.service');
  assert.equal(parseAppUnit('0::/system.slice/steward-app-web@c.service\n'), null, 'only the sides a and b');
  assert.equal(parseAppUnit('0::/system.slice/steward-app-web.hold.service\n'), null, 'the holder runs no app');
  assert.equal(parseAppUnit('0::/system.slice/steward-app-web.0123@a.service\n'), null);
});

test('a socket unit listens where the config says, as the socket keeper would, and activates only the holder', () => {
  const v4 = socketUnitText('web', { name: 'http', listen: '0.0.0.0:8080' }, 'steward-app-web.hold.service');
  assert.match(v4, /^ListenStream=0\.0\.0\.0:8080$/m);
  assert.match(v4, /^FileDescriptorName=http$/m);
  assert.match(v4, /^Backlog=4096$/m);
  assert.match(v4, /^Service=steward-app-web\.hold\.service$/m);
  assert.match(v4, /^TriggerLimitIntervalSec=0$/m);
  assert.doesNotMatch(v4, /BindIPv6Only|SocketMode/);
  const v6 = socketUnitText('web', { name: 'h6', listen: '[::]:8080' }, 'h.service');
  assert.match(v6, /^ListenStream=\[::\]:8080$/m);
  assert.match(v6, /^BindIPv6Only=ipv6-only$/m);
  const unix = socketUnitText('web', { name: 'u', listen: '/run/a %n $x "q"/s.sock' }, 'h.service');
  assert.match(unix, /^ListenStream=\/run\/a %%n \$x "q"\/s\.sock$/m);
  assert.match(unix, /^SocketMode=0666$/m);
  assert.match(unix, /^RemoveOnStop=yes$/m);
  assert.throws(() => socketUnitText('web', { name: 'u', listen: '/run/ends\\' }, 'h.service'), /backslash/);
  assert.throws(() => socketUnitText('web', { name: 'u', listen: '/run/trail ' }, 'h.service'), /whitespace/);
  assert.throws(() => socketUnitText('web', { name: 'u', listen: 'example.com:80' }, 'h.service'), (e: { code?: string }) => e.code === 'CONFIG_INVALID');
});

test('the holder never accepts and the template takes the sockets, with no start limit that could close them', () => {
  const names = socketUnitNames('web', '', [{ name: 'http', listen: '127.0.0.1:1' }, { name: 'admin', listen: '/run/a.sock' }]);
  const holder = holderUnitText('web', names.sockets);
  assert.match(holder, /^ExecStart=\/bin\/sleep infinity$/m);
  assert.match(holder, /^DynamicUser=yes$/m);
  assert.match(holder, /^StartLimitIntervalSec=0$/m);
  const tpl = templateUnitText('web', names);
  assert.match(tpl, /^Sockets=steward-app-web@http\.socket steward-app-web@admin\.socket$/m, 'in the config\'s order: LISTEN_FDS order');
  assert.match(tpl, /^Requires=steward-app-web@http\.socket steward-app-web@admin\.socket$/m);
  assert.match(tpl, /^Wants=steward-app-web\.hold\.service$/m);
  assert.match(tpl, /^Type=exec$/m);
  assert.match(tpl, /^StartLimitIntervalSec=0$/m);
  assert.doesNotMatch(tpl, /ExecStart/, 'each side has its command in its drop-in');
});

test("a side's drop-in holds the start's command, folder, user, environment and limits, each line one setting", () => {
  const s: SideSettings = {
    app: 'web',
    version: '1.2.3',
    command: ['/bin/sh', '-c', 'exec 4<>"$1" || exit 126; shift 1; exec "$@"', 'steward-fds', '/run/steward-fds/web/ready', '/usr/bin/node', 'server.js', ...HOSTILE],
    cwd: '/opt/steward %i/apps/web/versions/1.2.3',
    user: { name: 'web', gid: 991 },
    env: Object.fromEntries(HOSTILE.map((v, i) => [`V${i}`, v])),
    memoryMax: 512 * 1024 * 1024,
    stopTimeoutMs: 2500,
    exitFile: '/run/steward/unit-exits/steward-app-web@a.service',
  };
  const text = sideDropInText(s);
  const lines = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  for (const l of lines) assert.match(l, /^(\[(Unit|Service)\]|[A-Za-z]+=.*)$/, `one setting per line: ${JSON.stringify(l)}`);
  const get = (k: string) => lines.filter((l) => l.startsWith(`${k}=`)).map((l) => l.slice(k.length + 1));
  assert.deepEqual(readWords(get('ExecStart')[0] as string, true), s.command);
  assert.deepEqual(get('WorkingDirectory'), ['/opt/steward %%i/apps/web/versions/1.2.3']);
  assert.deepEqual(get('User'), ['web']);
  assert.deepEqual(get('Group'), ['991']);
  assert.deepEqual(get('MemoryMax'), [String(512 * 1024 * 1024)]);
  assert.deepEqual(get('KillMode'), ['mixed']);
  assert.deepEqual(get('TimeoutStopSec'), ['3s']);
  assert.deepEqual(get('SyslogIdentifier'), ['steward-app-web']);
  assert.deepEqual(get('Environment').map((e) => readWords(e, false)[0]), Object.entries(s.env).map(([k, v]) => `${k}=${v}`));
  const post = get('ExecStopPost')[0] as string;
  assert.ok(post.startsWith('+'), 'as root: the app cannot write its own exit');
  assert.deepEqual(readWords(post.slice(1), true).slice(-1), [s.exitFile]);
  assert.throws(() => sideDropInText({ ...s, cwd: '/a\nExecStartPre=/bin/evil' }), (e: { code?: string }) => e.code === 'RELEASE_INVALID');
  assert.throws(() => sideDropInText({ ...s, user: { name: 'web\nUser=root', gid: 1 } }), /control character/);
  assert.throws(() => sideDropInText({ ...s, version: '1.0.0 %n\n' }), /control character/);
  assert.throws(() => sideDropInText({ ...s, command: ['node', 'x'] }), /absolute program path/);
});

test('how a side ended is read from its exit file, and from systemctl show of that very process', () => {
  assert.deepEqual(parseExitFile('exit-code exited 3\n'), { code: 3, signal: null });
  assert.deepEqual(parseExitFile('success exited 0\n'), { code: 0, signal: null });
  assert.deepEqual(parseExitFile('success killed TERM\n'), { code: null, signal: 'SIGTERM' });
  assert.deepEqual(parseExitFile('signal killed 9\n'), { code: null, signal: 'SIGKILL' });
  assert.deepEqual(parseExitFile('oom-kill killed KILL\n'), { code: null, signal: 'SIGKILL', reason: 'OOM' });
  assert.deepEqual(parseExitFile('core-dump dumped SEGV\n'), { code: null, signal: 'SIGSEGV' });
  for (const bad of ['', 'garbage', 'success exited x\n', 'success exited 0\nmore', '  ']) assert.equal(parseExitFile(bad), null, JSON.stringify(bad));
  const show = 'ExecMainPID=42\nExecMainCode=1\nExecMainStatus=3\nResult=exit-code\n';
  assert.deepEqual(parseSideExit(show, 42), { code: 3, signal: null });
  assert.equal(parseSideExit(show, 43), null, 'another process: nothing said of this one');
  assert.deepEqual(parseSideExit('ExecMainPID=42\nExecMainCode=2\nExecMainStatus=9\nResult=oom-kill\n', 42), { code: null, signal: 'SIGKILL', reason: 'OOM' });
  assert.equal(parseSideExit('ExecMainPID=0\nExecMainCode=0\nExecMainStatus=0\n', null), null, 'an unloaded unit says nothing');
});

test('systemctl show of several units is read block by block, and a socket that cannot bind is told in the keeper\'s words', () => {
  const text = 'Id=a.service\nLoadState=loaded\nActiveState=active\nMainPID=7\nNeedDaemonReload=no\n\nId=b.service\nLoadState=loaded\nActiveState=failed\nMainPID=0\nNeedDaemonReload=yes\n';
  const m = parseShowBlocks(text, ['a.service', 'b.service']);
  assert.deepEqual(m.get('a.service'), { loadState: 'loaded', activeState: 'active', mainPid: 7, needReload: false });
  assert.deepEqual(m.get('b.service'), { loadState: 'loaded', activeState: 'failed', mainPid: 0, needReload: true });
  assert.equal(socketWhy('x\nsteward-app-web@http.socket: Failed to create listening socket (127.0.0.1:80): Address already in use\n'), '(127.0.0.1:80) the address is taken by another process');
  assert.equal(socketWhy('Failed to create listening socket (192.0.2.1:80): Cannot assign requested address'), '(192.0.2.1:80) it is not an address of this host');
  assert.equal(socketWhy('nothing'), 'systemd could not open it (see its journal)');
});

test('a unit file is written whole under a name systemd never reads, renamed into place, and not at all when its text is there', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-units-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'steward-app-web@a.service.d', 'steward.conf');
  assert.equal(await writeIfChanged(file, 'one\n'), true);
  assert.equal(readFileSync(file, 'utf8'), 'one\n');
  assert.equal(await writeIfChanged(file, 'one\n'), false, 'the same text: nothing to write (and no reload)');
  assert.equal(await writeIfChanged(file, 'two\n'), true);
  assert.equal(readFileSync(file, 'utf8'), 'two\n');
  assert.deepEqual(readdirSync(path.dirname(file)), ['steward.conf'], 'no temporary file is left');
  assert.equal(await writeIfChanged(path.join(dir, 'made', 'x.socket'), 'x'), true, 'a missing folder is made');
});

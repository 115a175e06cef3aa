// The unit files of an app with sockets under the systemd runner (docs/design.md §17, "Under
// systemd"): systemd 252 takes no `Sockets=` on a transient unit, so the helper writes runtime
// unit files into /run/systemd/system:
// - <base>@<name>.socket per declared socket (FileDescriptorName= names a whole socket unit);
// - <base>.hold.service, the socket units' Service=: a process that never accepts, running while
//   they do, so a connection never activates anything steward did not start (it waits in the
//   kernel's queue for the app);
// - the template <base>@.service (Sockets= those units) and its two sides, <base>@a.service and
//   <base>@b.service, each with its command and settings in a drop-in (a handover runs both).
// <base> is steward-app-<app>, with ".<hash of the root prefix>" for a test or demo host, whose
// units are the machine's all the same ('.' and '@' are in no app name).
// Every value is treated as hostile: written so that systemd reads back exactly it (specifiers
// `%`, variables `$`, quotes and escapes), or refused where systemd's syntax cannot carry it.
import { createHash } from 'node:crypto';
import { constants as osConstants } from 'node:os';
import { StewardError, type ReasonCode } from '../../core/errors.js';
import { parseListenAddress, type SocketDecl } from '../../core/listen-address.js';

export const RUNTIME_UNIT_DIR = '/run/systemd/system';
export type Side = 'a' | 'b';
export const SIDES: readonly Side[] = ['a', 'b'];

export interface SocketUnitNames {
  base: string;
  // <base>@.service
  template: string;
  // <base>@a.service, <base>@b.service
  sides: Record<Side, string>;
  holder: string;
  // The socket units, in the order of the config's sockets (the order of LISTEN_FDS).
  sockets: string[];
}

// The prefix part of the names: the production host ('') has none.
export function socketUnitBase(app: string, rootPrefix: string): string {
  if (!/^[a-z0-9][a-z0-9_-]{0,62}$/.test(app)) throw new StewardError('CONFIG_INVALID', `not an app name: ${JSON.stringify(app)}`);
  return rootPrefix === '' ? `steward-app-${app}` : `steward-app-${app}.${createHash('sha256').update(rootPrefix).digest('hex').slice(0, 16)}`;
}

export function socketUnitNames(app: string, rootPrefix: string, sockets: SocketDecl[]): SocketUnitNames {
  const base = socketUnitBase(app, rootPrefix);
  return {
    base,
    template: `${base}@.service`,
    sides: { a: `${base}@a.service`, b: `${base}@b.service` },
    holder: `${base}.hold.service`,
    sockets: sockets.map((s) => `${base}@${checkSocketName(s.name)}.socket`),
  };
}

// The side units' drop-in: <dir>/<base>@<side>.service.d/<DROP_IN>.
export const DROP_IN = 'steward.conf';

function checkSocketName(name: string): string {
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name)) throw new StewardError('CONFIG_INVALID', `not a socket name: ${JSON.stringify(name.slice(0, 80))}`);
  return name;
}

const HEADER = '# Written by steward-helper for an app with sockets; removed when the app is stopped (agentctl stop). Do not edit.\n';

// One socket unit.
export function socketUnitText(app: string, decl: SocketDecl, holder: string): string {
  const addr = parseListenAddress(decl.listen);
  if (typeof addr === 'string') throw new StewardError('CONFIG_INVALID', `apps.${app}.sockets ${decl.name}: ${addr}`);
  const lines = [
    '[Unit]',
    `Description=${plainValue('CONFIG_INVALID', 'the description', `steward app ${app}: socket ${checkSocketName(decl.name)}`)}`,
    '[Socket]',
    `ListenStream=${plainValue('CONFIG_INVALID', `apps.${app}.sockets ${decl.name}`, decl.listen)}`,
    `FileDescriptorName=${decl.name}`,
    'Backlog=4096',
  ];
  // As the socket keeper binds them: an IPv6 socket never takes IPv4 too, a Unix one is anyone's.
  if (addr.kind === 'tcp' && addr.family === 6) lines.push('BindIPv6Only=ipv6-only');
  if (addr.kind === 'unix') lines.push('SocketMode=0666', 'RemoveOnStop=yes');
  // Never triggered into anything but the holder, at most as often as the app's processes come and go.
  lines.push(`Service=${holder}`, 'TriggerLimitIntervalSec=0');
  return HEADER + lines.join('\n') + '\n';
}

// The holder: the socket units' Service=, started with them, never accepting.
export function holderUnitText(app: string, sockets: string[]): string {
  return (
    HEADER +
    [
      '[Unit]',
      `Description=steward app ${app}: holds its sockets (never accepts)`,
      'StartLimitIntervalSec=0',
      `After=${sockets.join(' ')}`,
      '[Service]',
      'ExecStart=/bin/sleep infinity',
      // No user of anyone's: a user of its own, allocated while it runs.
      'DynamicUser=yes',
    ].join('\n') +
    '\n'
  );
}

// The template of the app's processes: the sockets as fds 3 and up (Requires=: an instance whose
// socket cannot be bound does not start without it), the holder started with them.
export function templateUnitText(app: string, names: SocketUnitNames): string {
  return (
    HEADER +
    [
      '[Unit]',
      `Description=steward app ${app}`,
      // A crash loop must never make systemd give up on the unit and close its sockets.
      'StartLimitIntervalSec=0',
      `Requires=${names.sockets.join(' ')}`,
      `Wants=${names.holder}`,
      `After=${names.holder}`,
      '[Service]',
      // The start job ends once the exec worked (as the transient units' --service-type=exec).
      'Type=exec',
      `Sockets=${names.sockets.join(' ')}`,
    ].join('\n') +
    '\n'
  );
}

export interface SideSettings {
  app: string;
  version: string;
  // The whole command line, the program first (already wrapped: /bin/sh ...).
  command: string[];
  cwd: string;
  user?: { name: string; gid: number };
  env: Record<string, string>;
  memoryMax?: number;
  stopTimeoutMs: number;
  // Where systemd writes how the side's main process ended (exitLine), as root, once it has.
  exitFile: string;
}

// The drop-in of one side: everything of one start.
export function sideDropInText(s: SideSettings): string {
  const bad = (why: string) => new StewardError('RELEASE_INVALID', `cannot start ${s.app} ${s.version}: ${why}`);
  const [file] = s.command;
  if (file === undefined || !file.startsWith('/')) throw bad('the unit command must start with an absolute program path');
  const lines = [
    '[Unit]',
    `Description=${plainValue('RELEASE_INVALID', 'the version', `steward app ${s.app} ${s.version}`)}`,
    '[Service]',
    `ExecStart=${s.command.map(execWord).join(' ')}`,
    `WorkingDirectory=${plainValue('RELEASE_INVALID', 'the folder', s.cwd)}`,
    'KillMode=mixed',
    `TimeoutStopSec=${Math.max(1, Math.ceil(s.stopTimeoutMs / 1000))}s`,
    'StandardOutput=journal',
    'StandardError=journal',
    `SyslogIdentifier=steward-app-${s.app}`,
    // How it ended, as systemd tells its ExecStopPost= ('+': as root, so the app cannot write
    // it): an inactive unit is soon unloaded with its ExecMainStatus, a failed one is not.
    `ExecStopPost=+${EXIT_LINE_COMMAND.map(execWord).join(' ')} ${execWord(checkPath(s.exitFile, bad))}`,
  ];
  if (s.user) {
    if (!Number.isSafeInteger(s.user.gid) || s.user.gid < 0) throw bad(`not a group id: ${s.user.gid}`);
    lines.push(`User=${plainValue('CONFIG_INVALID', 'the user name', s.user.name)}`, `Group=${s.user.gid}`);
  }
  if (s.memoryMax !== undefined) {
    if (!Number.isSafeInteger(s.memoryMax) || s.memoryMax <= 0) throw bad(`not a memory limit: ${s.memoryMax}`);
    lines.push(`MemoryMax=${s.memoryMax}`);
  }
  for (const [k, v] of Object.entries(s.env)) lines.push(`Environment=${envAssignment(k, v, s)}`);
  return HEADER + lines.join('\n') + '\n';
}

// The command of ExecStopPost=, then the file as its $1: one line, "<result> <code> <status>"
// (SERVICE_RESULT, EXIT_CODE, EXIT_STATUS).
const EXIT_LINE_COMMAND = ['/bin/sh', '-c', 'printf "%s %s %s\\n" "$SERVICE_RESULT" "$EXIT_CODE" "$EXIT_STATUS" > "$1"', 'steward-exit'];

function checkPath(p: string, bad: (why: string) => StewardError): string {
  if (!p.startsWith('/') || /[\0\n]/.test(p)) throw bad(`not a file path: ${JSON.stringify(p.slice(0, 80))}`);
  return p;
}

// The line the side's ExecStopPost= wrote (its exit file), as an exit: "exit-code exited 3", "signal killed
// TERM" (a name, or a number), "oom-kill killed KILL". Null when it is not such a line.
export function parseExitFile(text: string): { code: number | null; signal: string | null; reason?: 'OOM' } | null {
  const m = /^([a-z-]+) (exited|killed|dumped) ([A-Z0-9+-]+)\n?$/.exec(text);
  if (!m) return null;
  const [, result, how, status = ''] = m;
  const oom = result === 'oom-kill' ? { reason: 'OOM' as const } : {};
  if (how === 'exited') return /^\d+$/.test(status) ? { code: Number(status), signal: null, ...oom } : null;
  const name = /^\d+$/.test(status) ? signalOf(Number(status)) : status.startsWith('SIG') ? status : `SIG${status}`;
  return { code: null, signal: name, ...oom };
}

// The name of signal number `n` on this platform, or null.
export function signalOf(n: number): string | null {
  for (const [name, num] of Object.entries(osConstants.signals)) if (num === n) return name;
  return null;
}

// A value systemd takes to the end of its line, specifiers expanded: one line with no control
// character, no whitespace at either end (systemd strips it), no backslash at its end (a
// continued line); '%' is doubled. Anything else is refused with `code`.
export function plainValue(code: ReasonCode, what: string, v: string): string {
  const why =
    v === ''
      ? 'it is empty'
      : /[\0-\x1f\x7f]/.test(v)
        ? 'it holds a control character (a newline, say)'
        : v !== v.trim()
          ? 'it starts or ends with whitespace'
          : v.endsWith('\\')
            ? 'it ends with a backslash'
            : /\p{Surrogate}/u.test(v)
              ? 'it is not well-formed Unicode'
              : null;
  if (why) throw new StewardError(code, `${what} ${JSON.stringify(v.slice(0, 80))} cannot be written into a unit file: ${why}`);
  return v.replaceAll('%', '%%');
}

// One word of ExecStart=: in double quotes, C-escaped (systemd unquotes and unescapes it), '%'
// doubled (specifiers are expanded before the line is split), '$' doubled (variables are
// expanded in each word at exec time). Quoted, a ';' is never a separator. (The first word's
// prefixes, '-', '@', '+', are read after unquoting: the first word is always steward's own.)
export function execWord(v: string): string {
  return `"${cEscape(v, 'RELEASE_INVALID', 'an argument').replaceAll('%', '%%').replaceAll('$', '$$$$')}"`;
}

// One Environment= assignment, "NAME=value", quoted and C-escaped, '%' doubled ($ is not expanded there).
export function envAssignment(k: string, v: string, s: { app: string; version: string }): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(k)) throw new StewardError('RELEASE_INVALID', `cannot start ${s.app} ${s.version}: not a variable name: ${JSON.stringify(k.slice(0, 80))}`);
  return `"${cEscape(`${k}=${v}`, 'RELEASE_INVALID', `the value of ${k}`).replaceAll('%', '%%')}"`;
}

// Backslash, double quote and every control character as C escapes (systemd's cunescape reads
// them back). NUL cannot be carried (nor passed to exec) and is refused.
function cEscape(v: string, code: ReasonCode, what: string): string {
  if (v.includes('\0')) throw new StewardError(code, `${what} holds a NUL byte`);
  if (/\p{Surrogate}/u.test(v)) throw new StewardError(code, `${what} is not well-formed Unicode`);
  return v.replace(/[\\"\x01-\x1f\x7f]/g, (c) => {
    if (c === '\\') return '\\\\';
    if (c === '"') return '\\"';
    if (c === '\n') return '\\n';
    if (c === '\t') return '\\t';
    return `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
  });
}

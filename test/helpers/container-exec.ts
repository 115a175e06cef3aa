import assert from 'node:assert/strict';
import { helperStatus } from './helper-status.js';
import type { ExecResult, SystemdContainer } from './systemd-container.js';

// Commands inside a booted test container, for the suites that drive a whole host there.

export interface RunResult extends ExecResult {
  // stdout parsed as JSON, or null.
  json: any;
  // stdout then stderr, for assertion messages.
  text: string;
}

// A path inside the container as this process reaches it: through its PID 1's root
// (/proc/<pid>/root), which resolves in the container's mount namespace. Its Unix sockets connect
// from here too, and its root is this process's root user (systemd-nspawn without a user namespace).
// Not for SQLite, which resolves the symbolic link /proc/<pid>/root to `/`, this host's root: a
// database the test reads from here is in a folder bound into the container (BootOptions.bind).
export function pathIn(box: SystemdContainer, file = '/'): string {
  return `/proc/${box.pid}/root${file === '/' ? '' : file}`;
}

// The status answer of the helper inside the container (under `root`, a prefix inside it, `/`
// for an installed one), asked over its socket from this process (helper-status.ts); null while
// it does not answer. The waits on a helper inside a container poll this: an `agentctl status`
// per poll was an nsenter and a node started inside, ~0.2-0.3 s of CPU each, every 200-500 ms.
// What a test asserts about agentctl's own output it still reads from agentctl.
export function helperStatusIn(box: SystemdContainer, root = '/'): Promise<any> {
  return helperStatus(pathIn(box, root));
}

// The status of `app` in the container as `agentctl --json status <app>` gives it, once the
// helper answers and has recovered; null before.
export async function appStatusIn(box: SystemdContainer, app: string, root = '/'): Promise<any> {
  const s = await helperStatusIn(box, root);
  return s?.recovering === false ? (s.apps as any[]).find((a) => a.name === app) ?? null : null;
}

// Runs a command inside; never rejects on its exit code.
export async function runIn(box: SystemdContainer, cmd: string, args: string[] = [], timeoutMs = 60_000): Promise<RunResult> {
  const r = await box.exec(cmd, args, { timeoutMs });
  let json: any = null;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    // not JSON
  }
  return { ...r, json, text: `${r.stdout}${r.stderr}` };
}

// `sh -c script sh ...args` inside; must exit 0.
export async function shIn(box: SystemdContainer, script: string, ...args: string[]): Promise<RunResult> {
  const r = await runIn(box, '/bin/sh', ['-c', script, 'sh', ...args]);
  assert.equal(r.code, 0, `sh -c ${script}: ${r.text}`);
  return r;
}

// Writes bytes to a file inside the container (mode 0644 when it makes it).
export async function writeIn(box: SystemdContainer, file: string, bytes: Buffer | string): Promise<void> {
  const child = box.spawn('/bin/sh', ['-c', 'umask 022 && cat > "$1"', 'sh', file]);
  let err = '';
  child.stderr?.on('data', (c) => (err += c));
  const code = await new Promise<number | null>((resolve) => {
    child.once('close', (c) => resolve(c));
    child.stdin?.end(bytes);
  });
  assert.equal(code, 0, `writing ${file} in the container: ${err}`);
}

// Prints which scenarios of a container suite ran; when fewer than `planned` did, also the last
// `lines` lines of the `units`' journal, which is what a failure there needs to be understood.
export async function reportScenarios(
  box: SystemdContainer,
  ran: string[],
  planned: number,
  opts: { units: string[]; lines: number; output?: 'cat' | 'short-monotonic' },
): Promise<void> {
  console.log(`scenarios run (${ran.length}/${planned}): ${ran.length ? ran.join('; ') : 'none'}`);
  if (ran.length >= planned) return;
  const units = opts.units.flatMap((u) => ['-u', u]);
  const j = await box.exec('journalctl', [...units, '-o', opts.output ?? 'cat', '--no-pager', '-n', String(opts.lines)]);
  console.log(`--- last lines of the journal of ${opts.units.join(', ')} ---\n${j.stdout}`);
}

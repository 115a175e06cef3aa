import assert from 'node:assert/strict';
import type { ExecResult, SystemdContainer } from './systemd-container.js';

// Commands inside a booted test container, for the suites that drive a whole host there.

export interface RunResult extends ExecResult {
  // stdout parsed as JSON, or null.
  json: any;
  // stdout then stderr, for assertion messages.
  text: string;
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

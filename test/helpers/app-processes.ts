import { promises as fsp, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../src/core/errors.js';
import { hostPaths } from '../../src/core/paths.js';
import { callHelper, pickSocket } from '../../src/protocol/client.js';
import { helperClient } from '../../src/protocol/helper-client.js';
import { agentctl, recordedPid, type TestHost } from './host.js';

export { recordedPid } from './host.js';

// Kills the recorded process group of each app (a session leader), so no test leaves
// an app holding its port. `agentctl stop` does not exist yet.
export function killApps(host: TestHost, apps: string[]): void {
  for (const app of apps) {
    const pid = recordedPid(host, app);
    if (pid === null) continue;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

// The helper's `status` answer, asked over its socket from this process, or null while it does
// not answer (not listening yet, or restarting). The waits below poll it: an agentctl process per
// poll cost ~0.15 s of CPU, ten times a second, in every file that waits on a helper.
async function helperStatus(host: TestHost): Promise<any> {
  try {
    const socket = await pickSocket(hostPaths(host.root));
    return await helperClient((request, opts) => callHelper(socket.path, request, opts)).status();
  } catch (err) {
    if (err instanceof StewardError) return null;
    throw err;
  }
}

// Polls the helper's status until no app has running work.
export async function waitIdle(host: TestHost, timeoutMs = 30_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await helperStatus(host);
    if (status?.apps.every((a: { running: unknown }) => a.running === null)) return status;
    if (Date.now() > deadline) throw new Error(`work still running after ${timeoutMs} ms: ${JSON.stringify(status)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

// The app's entry in `agentctl status --json`.
export async function appStatus(host: TestHost, app: string): Promise<any> {
  const r = await agentctl(host, ['status', app, '--json']);
  if (r.code !== 0) throw new Error(`status ${app} exited ${r.code}: ${r.stderr}${r.stdout}`);
  return r.json.apps[0];
}

// Every receipt, decoded and verified by agentctl (exit 0 only when all verify).
export async function allReceipts(host: TestHost, app?: string): Promise<{ code: number; receipts: any[] }> {
  const r = await agentctl(host, ['receipts', ...(app ? [app] : []), '--json']);
  return { code: r.code, receipts: r.json?.receipts ?? [] };
}

// Polls the helper's status until its start (recovery, first pass, cleanup) is over.
export async function waitReady(host: TestHost, timeoutMs = 30_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await helperStatus(host);
    if (status?.recovering === false) return status;
    if (Date.now() > deadline) throw new Error(`the helper still recovers after ${timeoutMs} ms: ${JSON.stringify(status)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

// Pids of every live (non-zombie) process whose working folder is inside `dir`: the apps a
// test host's helpers started, which outlive the helpers.
export async function processesUnder(dir: string): Promise<number[]> {
  const root = await fsp.realpath(dir).catch(() => null);
  if (!root) return [];
  const out: number[] = [];
  for (const name of await fsp.readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const cwd = await fsp.readlink(`/proc/${name}/cwd`).catch(() => null);
    if (!cwd || !(cwd === root || cwd.startsWith(root + '/'))) continue;
    const stat = await fsp.readFile(`/proc/${name}/stat`, 'utf8').catch(() => null);
    if (!stat || stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
    out.push(Number(name));
  }
  return out;
}

export interface Daemon {
  // The main process that started it.
  main: number;
  pid: number;
  alive: boolean;
}

// Whether `pid` runs (a zombie does not).
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

// The daemonized children that the app's releases registered (test/fixtures/app-releases.ts,
// behavior.daemons) in `stateDir` (the app's STATE_DIRECTORY).
export function registeredDaemons(stateDir: string): Daemon[] {
  let names: string[];
  try {
    names = readdirSync(path.join(stateDir, 'daemons'));
  } catch {
    return [];
  }
  return names
    .map((n) => /^(\d+)-(\d+)$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ main: Number(m[1]), pid: Number(m[2]), alive: isRunning(Number(m[2])) }));
}

// SIGKILLs every registered daemon still running (a test's cleanup: steward under test may not).
export function killDaemons(stateDir: string): void {
  for (const d of registeredDaemons(stateDir)) {
    if (!d.alive) continue;
    try {
      process.kill(d.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

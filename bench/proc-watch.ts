import { readdirSync, readFileSync } from 'node:fs';

// What the respawn and footprint benches share: finding an app's process by its command line in
// the host's /proc (which also shows every process of a container on this host), timing a
// SIGKILL until a replacement exists, reading a process's footprint. Flags, figures and rows are
// bench/lib.ts's, re-exported here for those two scripts.
export { benchArgs, note, printRow, ratios, series, type BenchArgs, type Row, type Series } from './lib.js';

// The command line of a pid as its arguments, or null when it is gone (or a zombie: empty).
function argvOf(pid: string): string[] | null {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
    if (!raw) return null;
    return raw.split('\0').slice(0, -1);
  } catch {
    return null;
  }
}

// Whether argv is `sleep <marker>` (any path to sleep): the benchmark app, after its exec.
function isApp(argv: string[] | null, marker: string): boolean {
  if (!argv || argv.length !== 2) return false;
  const a0 = argv[0] as string;
  return (a0 === 'sleep' || a0.endsWith('/sleep')) && argv[1] === marker;
}

// Live pids whose command line is `sleep <marker>`.
export function findApp(marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (name.charCodeAt(0) > 57) continue;
    if (isApp(argvOf(name), marker)) out.push(Number(name));
  }
  return out;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
// Blocks this thread for `ms` (the poll cadence; no timer of the event loop in between).
export function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

export interface Respawn {
  // Milliseconds from just before kill(2) to the scan that first saw the replacement.
  ms: number;
  oldPid: number;
  newPid: number;
  // How many /proc scans it took (each followed by a 1 ms sleep).
  scans: number;
  // Wall clock (epoch ms) just before the kill: lines up with a supervisor's own timestamped logs.
  killedAtMs: number;
}

// SIGKILLs the one process running `sleep <marker>` and polls /proc every 1 ms until another
// process runs `sleep <marker>`. Only pids that did not exist before the kill are read on each
// scan, so a scan costs about one readdir of /proc, and those that existed with the marker among
// their arguments: a process parked to exec the app (steward's spare, src/helper/runners/
// spare-process.ts, a `sh` with `sleep <marker>` as its arguments) becomes the replacement
// without being a new pid. A pid that exists but still runs its parent's image (forked, not yet
// exec'd) is read again on the next scan.
export function killAndTimeRespawn(marker: string, timeoutMs = 20_000): Respawn {
  const now = findApp(marker);
  if (now.length !== 1) throw new Error(`expected one process running sleep ${marker}, found ${now.length}: ${now.join(' ')}`);
  const oldPid = now[0] as number;
  const known = new Set(readdirSync('/proc'));
  const parked = [...known].filter((name) => name !== String(oldPid) && name.charCodeAt(0) <= 57 && (argvOf(name) ?? []).includes(marker));
  const killedAtMs = Date.now();
  const t0 = process.hrtime.bigint();
  process.kill(oldPid, 'SIGKILL');
  let scans = 0;
  for (;;) {
    scans++;
    for (const name of [...parked, ...readdirSync('/proc')]) {
      if ((known.has(name) && !parked.includes(name)) || name.charCodeAt(0) > 57) continue;
      if (isApp(argvOf(name), marker)) {
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        return { ms, oldPid, newPid: Number(name), scans, killedAtMs };
      }
    }
    if (Number(process.hrtime.bigint() - t0) / 1e6 > timeoutMs) throw new Error(`no replacement for sleep ${marker} within ${timeoutMs} ms`);
    sleepSync(1);
  }
}

// Waits (polling every 20 ms) until exactly one process runs `sleep <marker>`; returns its pid.
export async function waitForApp(marker: string, timeoutMs = 30_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = findApp(marker);
    if (pids.length === 1) return pids[0] as number;
    if (Date.now() > deadline) throw new Error(`timed out waiting for one process running sleep ${marker} (found ${pids.length})`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

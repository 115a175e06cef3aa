// Reads a V8 CPU profile (node --cpu-prof) and prints where the time went: self and inclusive
// time per function, as a share of the wall time sampled. With a phases file written by a bench
// (windows on CLOCK_MONOTONIC in microseconds, the clock of the profile's timestamps), only the
// samples inside the windows whose okStatus matches are counted: control-heartbeats alternates
// heartbeat phases with 404 phases, and a whole-process profile mixes the two.
//
//   node dist/bench/lib/profile-summary.js PROFILE [--phases FILE --status 200] [--top N] [--per N]
//
// Each line also says the microseconds of the main thread per answer counted in the windows (or
// per `--per N` answers without a phases file). "(idle)" is the main thread waiting in epoll;
// time blocked in a system call (fsync, writev) counts as the function that made it.
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}
interface Window {
  okStatus: number;
  // Answers with okStatus in the window.
  ok: number;
  startUs: number;
  endUs: number;
}

export interface Summary {
  wallUs: number;
  self: Array<[string, number]>;
  inclusive: Array<[string, number]>;
}

function frameName(f: CallFrame): string {
  const file = f.url.split('/').slice(-2).join('/');
  return `${f.functionName || '(anonymous)'} ${file}${file ? `:${f.lineNumber + 1}` : ''}`;
}

// Self and inclusive microseconds per function name, counting only samples inside `windows`
// (every sample when null). A sample stands for the time since the previous one.
export function summarize(p: Profile, windows: Window[] | null): Summary {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inside = (t: number) => windows === null || windows.some((w) => t >= w.startUs && t < w.endUs);
  const perNode = new Map<number, number>();
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0;
    t += dt;
    if (inside(t)) perNode.set(p.samples[i]!, (perNode.get(p.samples[i]!) ?? 0) + dt);
  }
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  let wallUs = 0;
  for (const [id, us] of perNode) {
    wallUs += us;
    const name = frameName(byId.get(id)!.callFrame);
    self.set(name, (self.get(name) ?? 0) + us);
    // Why a set: a recursive function counts once per sample in its inclusive time.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = frameName(byId.get(cur)!.callFrame);
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + us);
    }
  }
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  return { wallUs, self: sorted(self), inclusive: sorted(incl) };
}

function main(argv: string[]): void {
  const file = argv[0];
  if (!file) throw new Error('usage: profile-summary PROFILE [--phases FILE --status 200] [--top N] [--per N]');
  const opt = (name: string) => {
    const i = argv.indexOf(name);
    return i > 0 ? argv[i + 1] : undefined;
  };
  const phasesFile = opt('--phases');
  const status = Number(opt('--status') ?? 200);
  const top = Number(opt('--top') ?? 30);
  const windows = phasesFile ? (JSON.parse(readFileSync(phasesFile, 'utf8')) as Window[]).filter((w) => w.okStatus === status) : null;
  const per = windows ? windows.reduce((a, w) => a + w.ok, 0) : opt('--per') ? Number(opt('--per')) : null;
  const s = summarize(JSON.parse(readFileSync(file, 'utf8')) as Profile, windows);
  const line = ([name, us]: [string, number]) =>
    `${((100 * us) / s.wallUs).toFixed(1).padStart(5)}%${per ? ` ${Math.round(us / per).toString().padStart(5)} us/hb` : ''}  ${name}`;
  console.log(`wall sampled ${(s.wallUs / 1e6).toFixed(2)} s${windows ? ` in ${windows.length} windows of status ${status}` : ''}${per ? `, ${per} answers` : ''}`);
  console.log('--- self');
  for (const e of s.self.slice(0, top)) console.log(line(e));
  console.log('--- inclusive');
  for (const e of s.inclusive.slice(0, top * 2)) console.log(line(e));
}

if (import.meta.url === `file://${process.argv[1]}`) main(process.argv.slice(2));

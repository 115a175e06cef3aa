// An HTTP load generator spread over worker threads, so that the client is not the limit of a
// server it measures: one thread of node:http sends ~3,000 small requests/s here, less than a
// server answering them on the other core. This file is both the main-thread API and the
// worker's body. Two load models:
// - closed loop (run): each lane is one keep-alive connection sending its own list of requests
//   one at a time, in order, the next as soon as the last is answered; lanes are dealt to the
//   workers. Its rate is bound by the latency times the lanes (Little's law).
// - open loop (runOpen): each request is sent at its own time on the schedule, whether or not
//   earlier ones were answered, on a fresh connection closed after the answer (as an agent
//   does: `agent: false`, one heartbeat every 30 s). Latency is measured from the scheduled time,
//   so a generator or server falling behind shows in it (no coordinated omission).
import http from 'node:http';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';

export interface LoadRequest {
  p: string;
  method: string;
  body?: Uint8Array;
}

export interface LoadResult {
  ok: number;
  errors: Map<number, number>;
  perSecond: number;
  latencies: number[];
  // CPU seconds the whole bench process (every worker) used during the phase, per wall second.
  clientCpu: number;
  // Open loop: ms each request was sent after its scheduled time.
  lags: number[];
}

interface WorkerJob {
  url: string;
  lanes: LoadRequest[][];
  okStatus: number;
}

// One open-loop request: sent `at` ms after the phase's start.
export interface TimedRequest extends LoadRequest {
  at: number;
}

interface OpenJob {
  open: true;
  url: string;
  sends: TimedRequest[];
  okStatus: number;
  // An answer not complete this long after its send counts as an error (status 0).
  timeoutMs: number;
  // Send on pooled keep-alive connections instead of a fresh one each (what-if: agents that
  // kept their connection).
  keepAlive: boolean;
}

interface WorkerReport {
  ok: number;
  errors: Array<[number, number]>;
  latencies: number[];
  start: number;
  end: number;
  // Open loop: how late each request was sent after its scheduled time (the generator's own lag).
  lags?: number[];
}

const wallNow = () => performance.timeOrigin + performance.now();

// Sends one job's lanes and reports what came back.
// `deadline`: performance.timeOrigin + performance.now() at which to stop, comparable across threads.
async function runJob(job: WorkerJob, deadline: number): Promise<WorkerReport> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.lanes.length });
  const send = (r: LoadRequest) =>
    new Promise<number>((resolve, reject) => {
      const headers = r.body ? { 'content-type': 'application/json', 'content-length': r.body.length } : {};
      const req = http.request(job.url + r.p, { method: r.method, agent, headers }, (res) => {
        res.on('data', () => {});
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(r.body ? Buffer.from(r.body.buffer, r.body.byteOffset, r.body.length) : undefined);
    });
  const latencies: number[] = [];
  const errors = new Map<number, number>();
  let ok = 0;
  const start = wallNow();
  try {
    await Promise.all(job.lanes.map(async (lane) => {
      for (const r of lane) {
        if (wallNow() >= deadline) return;
        const s = performance.now();
        const status = await send(r);
        latencies.push(performance.now() - s);
        if (status === job.okStatus) ok++;
        else errors.set(status, (errors.get(status) ?? 0) + 1);
      }
    }));
  } finally {
    agent.destroy();
  }
  return { ok, errors: [...errors], latencies, start, end: wallNow() };
}

// Sends each request of an open-loop job at `start + at` on its own connection, and reports what
// came back once every answer is in (or timed out). Status 0: no answer (error or timeout).
async function runOpenJob(job: OpenJob, start: number): Promise<WorkerReport> {
  const agent = job.keepAlive ? new http.Agent({ keepAlive: true }) : false;
  const latencies: number[] = [];
  const errors = new Map<number, number>();
  let ok = 0;
  let last = start;
  const count = (status: number, due: number) => {
    const t = wallNow();
    last = Math.max(last, t);
    latencies.push(t - due);
    if (status === job.okStatus) ok++;
    else errors.set(status, (errors.get(status) ?? 0) + 1);
  };
  const lags: number[] = [];
  const fire = (r: TimedRequest) =>
    new Promise<void>((resolve) => {
      const due = start + r.at;
      lags.push(wallNow() - due);
      let settled = false;
      const done = (status: number) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        count(status, due);
        resolve();
      };
      const headers = r.body ? { 'content-type': 'application/json', 'content-length': r.body.length } : {};
      const req = http.request(job.url + r.p, { method: r.method, agent, headers }, (res) => {
        res.on('data', () => {});
        res.on('end', () => done(res.statusCode ?? 0));
        res.on('error', () => done(0));
      });
      const timer = setTimeout(() => (done(0), req.destroy()), job.timeoutMs);
      req.on('error', () => done(0));
      req.end(r.body ? Buffer.from(r.body.buffer, r.body.byteOffset, r.body.length) : undefined);
    });
  const pending: Array<Promise<void>> = [];
  let i = 0;
  while (i < job.sends.length) {
    const now = wallNow();
    while (i < job.sends.length && start + job.sends[i]!.at <= now) pending.push(fire(job.sends[i++]!));
    if (i < job.sends.length) await new Promise((r) => setTimeout(r, Math.max(0, start + job.sends[i]!.at - wallNow())));
  }
  await Promise.all(pending);
  if (agent) agent.destroy();
  return { ok, errors: [...errors], latencies, start, end: last, lags };
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  // A job, answered 'ready'; then {go: deadline} starts it (an open job: {go: start}). Why two
  // steps: copying a phase's bodies to a worker takes a while, and every worker must start
  // sending at the same time.
  let job: WorkerJob | OpenJob | null = null;
  port.on('message', (m: WorkerJob | OpenJob | { go: number }) => {
    if (!('go' in m)) {
      job = m;
      port.postMessage({ ready: true });
      return;
    }
    const j = job!;
    ('open' in j ? runOpenJob(j, m.go) : runJob(j, m.go)).then((r) => port.postMessage({ ok: true, report: r }), (err: unknown) => port.postMessage({ ok: false, error: String((err as Error)?.stack ?? err) }));
  });
}

export interface LoadPool {
  // Closed loop: runs every lane until `seconds` pass or the lanes run out; counts answers with `okStatus`.
  run(url: string, lanes: LoadRequest[][], seconds: number, okStatus: number): Promise<LoadResult>;
  // Open loop: sends every request at its time (ms from the start, ascending), dealt to the
  // workers in turn; waits for every answer. perSecond: answers with `okStatus` per second from
  // the start to the last answer.
  runOpen(url: string, sends: TimedRequest[], okStatus: number, timeoutMs: number, keepAlive?: boolean): Promise<LoadResult>;
  close(): Promise<void>;
}

// Starts `threads` workers (at least 1) running this file.
export function startLoadPool(threads: number): LoadPool {
  const workers = Array.from({ length: Math.max(1, threads) }, () => new Worker(new URL(import.meta.url)));
  const reply = <T>(w: Worker) =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number) => reject(new Error(`load worker exited ${code}`));
      w.once('exit', onExit);
      w.once('message', (m: T) => {
        w.off('exit', onExit);
        resolve(m);
      });
    });
  const ask = async (w: Worker, deadline: number): Promise<WorkerReport> => {
    const answer = reply<{ ok: boolean; report?: WorkerReport; error?: string }>(w);
    w.postMessage({ go: deadline });
    const m = await answer;
    if (!m.ok) throw new Error(`load worker failed: ${m.error}`);
    return m.report!;
  };
  // Hands each worker its job, then starts them all at `go` (a deadline, or an open job's start).
  const phase = async (jobs: Array<WorkerJob | OpenJob>, go: () => number): Promise<LoadResult> => {
    await Promise.all(workers.map((w, i) => {
      const ready = reply<{ ready: true }>(w);
      w.postMessage(jobs[i]);
      return ready;
    }));
    const at = go();
    const cpu0 = process.cpuUsage();
    const t0 = wallNow();
    const reports = await Promise.all(workers.map((w) => ask(w, at)));
    const cpu = process.cpuUsage(cpu0);
    const elapsed = (Math.max(...reports.map((r) => r.end)) - Math.min(...reports.map((r) => r.start))) / 1000;
    const errors = new Map<number, number>();
    for (const r of reports) for (const [s, c] of r.errors) errors.set(s, (errors.get(s) ?? 0) + c);
    const ok = reports.reduce((a, r) => a + r.ok, 0);
    return {
      ok, errors, perSecond: ok / elapsed, latencies: reports.flatMap((r) => r.latencies), lags: reports.flatMap((r) => r.lags ?? []),
      clientCpu: (cpu.user + cpu.system) / 1e6 / ((wallNow() - t0) / 1000),
    };
  };
  return {
    run: (url, lanes, seconds, okStatus) =>
      phase(workers.map((_, i) => ({ url, lanes: lanes.filter((_, l) => l % workers.length === i), okStatus })), () => wallNow() + seconds * 1000),
    // Why a start 20 ms ahead: every worker gets the message before its first send is due.
    runOpen: (url, sends, okStatus, timeoutMs, keepAlive = false) =>
      phase(workers.map((_, i) => ({ open: true, url, sends: sends.filter((_, k) => k % workers.length === i), okStatus, timeoutMs, keepAlive })), () => wallNow() + 20),
    close: async () => {
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}

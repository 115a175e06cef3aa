// A closed-loop HTTP load generator spread over worker threads, so that the client is not the
// limit of a server it measures: one thread of node:http sends ~3,000 small requests/s here,
// less than a server answering them on the other core. Each lane is one keep-alive connection
// sending its own list of requests one at a time, in order; lanes are dealt to the workers.
// This file is both the main-thread API (runLoad) and the worker's body.
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
}

interface WorkerJob {
  url: string;
  lanes: LoadRequest[][];
  okStatus: number;
}

interface WorkerReport {
  ok: number;
  errors: Array<[number, number]>;
  latencies: number[];
  start: number;
  end: number;
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

if (!isMainThread && parentPort) {
  const port = parentPort;
  // A job, answered 'ready'; then {go: deadline} starts it. Why two steps: copying a phase's
  // bodies to a worker takes a while, and every worker must start sending at the same time.
  let job: WorkerJob | null = null;
  port.on('message', (m: WorkerJob | { go: number }) => {
    if (!('go' in m)) {
      job = m;
      port.postMessage({ ready: true });
      return;
    }
    runJob(job!, m.go).then((r) => port.postMessage({ ok: true, report: r }), (err: unknown) => port.postMessage({ ok: false, error: String((err as Error)?.stack ?? err) }));
  });
}

export interface LoadPool {
  // Runs every lane until `seconds` pass or the lanes run out; counts answers with `okStatus`.
  run(url: string, lanes: LoadRequest[][], seconds: number, okStatus: number): Promise<LoadResult>;
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
  return {
    async run(url, lanes, seconds, okStatus) {
      await Promise.all(workers.map((w, i) => {
        const ready = reply<{ ready: true }>(w);
        w.postMessage({ url, lanes: lanes.filter((_, l) => l % workers.length === i), okStatus } satisfies WorkerJob);
        return ready;
      }));
      const deadline = wallNow() + seconds * 1000;
      const cpu0 = process.cpuUsage();
      const t0 = wallNow();
      const reports = await Promise.all(workers.map((w) => ask(w, deadline)));
      const cpu = process.cpuUsage(cpu0);
      const elapsed = (Math.max(...reports.map((r) => r.end)) - Math.min(...reports.map((r) => r.start))) / 1000;
      const errors = new Map<number, number>();
      for (const r of reports) for (const [s, c] of r.errors) errors.set(s, (errors.get(s) ?? 0) + c);
      const ok = reports.reduce((a, r) => a + r.ok, 0);
      return {
        ok, errors, perSecond: ok / elapsed, latencies: reports.flatMap((r) => r.latencies),
        clientCpu: (cpu.user + cpu.system) / 1e6 / ((wallNow() - t0) / 1000),
      };
    },
    close: async () => {
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}

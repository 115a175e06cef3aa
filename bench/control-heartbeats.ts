// Row 7 of issue 8: verified heartbeats per second through `steward-control serve` (SQLite), from
// many simulated nodes with real Ed25519 keys over loopback, with p50/p99 latency. The row is the
// open loop (the fleet's model: arrivals at their own times, a fresh connection each); the closed
// loop is printed beside it, with its peer, in the same run and through the same server,
// connections and client: a trivial request the server answers without a body, a store or a
// signature (GET of an unknown path, a 404). See bench/README.md.
//
// The load generator runs in worker threads (bench/lib/http-load.ts): one thread of node:http
// could not send faster than the server answered.
//
//   node dist/bench/control-heartbeats.js [--quick] [--json] [--nodes N] [--seconds S] [--threads T] [--connections C]
//     [--rates R1,R2,...] [--open-seconds S] [--p99-bound MS] [--keep-alive yes] [--cpu-prof DIR] [--server-bin PATH]
import { generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENROLL_PATH, HEARTBEAT_PATH } from '../src/core/control-api.js';
import { createToken } from '../src/control/enroll/tokens.js';
import { openSqliteStore } from '../src/control/store/sqlite/open-sqlite-store.js';
import { DOMAINS, signEnvelope, signPayloadBytes } from '../src/platform/keys.js';
import { startServeProcess, type ServeProcess } from '../test/helpers/serve-process.js';
import { startLoadPool, type LoadPool, type LoadRequest, type TimedRequest } from './lib/http-load.js';
import { benchArgs, cpuMsOf, median, printRow, quantile, ratios as ratiosOf, series } from './lib.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
// Issue 21's target: 4,000/s sustained open loop (at 50,000 enrolled nodes: `--nodes 50000`).
// The p99 row is read at issue 8's 2,000/s (its target then), the rate the default sweep reaches.
const TARGET = 4000;
const P99_AT = 2000;

const args = benchArgs(3, 1, ['--nodes', '--seconds', '--threads', '--connections', '--cpu-prof', '--rates', '--open-seconds', '--p99-bound', '--server-bin', '--keep-alive']);
// `--keep-alive yes`: the open loop sends on pooled keep-alive connections, not a fresh one per
// heartbeat (a what-if: agents that kept their connection; not the row's model).
const KEEP_ALIVE = args.rest['keep-alive'] === 'yes';
// Another build's bin/steward-control.js (an A/B against an earlier steward-control, same load).
const SERVER_BIN = args.rest['server-bin'] ?? path.join(root, 'bin', 'steward-control.js');
// Why 4,000: in the open loop a node's next heartbeat comes NODES arrivals after its last one;
// with 500 nodes at 2,000/s that was 250 ms, so any answer slower than that let the node's next
// heartbeat overtake it (409, counted as a failure), which no fleet does: its agents send one
// each 30 s. 4,000 nodes at 2,000/s is 2 s apart, longer than any answer of a sustained rate.
const NODES = Number(args.rest.nodes ?? (args.quick ? 40 : 4000));
// --quick only keeps the script working (CI): half-second phases.
const SECONDS = Number(args.rest.seconds ?? (args.quick ? 0.5 : 6));
const RUNS = args.runs;
// Load generator threads: one per core by default.
const THREADS = Number(args.rest.threads ?? Math.max(1, Math.min(4, os.availableParallelism())));
// Concurrent keep-alive connections, each a lane of nodes sent in turn (a node's seqs stay in order).
const LANES = Math.min(Number(args.rest.connections ?? 32), NODES);
if (!Number.isInteger(LANES) || LANES < 1) throw new Error(`--connections must be a positive integer`);
// A bound on the requests of one timed phase whatever the server's speed.
const MAX_PER_RUN = args.quick ? 4000 : 40_000;
// Open loop (the row's figure, see bench/README.md): the offered rates tried in turn, each for
// OPEN_SECONDS; a rate is sustained when every heartbeat offered is answered 200 and the p99
// latency, from each heartbeat's scheduled time, stays within P99_BOUND_MS.
const RATES = (args.rest.rates ?? (args.quick ? '200,400' : '500,1000,1500,2000,2500,3000,3500,4000')).split(',').map(Number);
if (RATES.some((r) => !(r > 0))) throw new Error('--rates takes positive numbers, e.g. 1000,2000');
const OPEN_SECONDS = Number(args.rest['open-seconds'] ?? (args.quick ? 0.5 : 4));
const P99_BOUND_MS = Number(args.rest['p99-bound'] ?? 100);
// An open-loop answer not complete within this counts as an error (the agent waits 30 s; a
// phase would then never end).
const OPEN_TIMEOUT_MS = 10_000;

interface SimNode {
  nodeId: string;
  key: KeyObject;
  seq: number;
}

// `steward-control serve` on 127.0.0.1 port 0 as its own process (SERVER_BIN, with node's CPU
// profiler when asked).
const startServer = (db: string, profDir?: string): Promise<ServeProcess> =>
  startServeProcess(db, [], { bin: SERVER_BIN, nodeArgs: profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [] });

// Enrollment's connections (the timed phases use the load pool's own, one agent per phase).
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

function send(url: string, p: string, method: string, body?: Buffer): Promise<{ status: number; raw: Buffer }> {
  return new Promise((resolve, reject) => {
    const headers = body ? { 'content-type': 'application/json', 'content-length': body.length } : {};
    const req = http.request(url + p, { method, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, raw: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

// Enrolls every node through POST /v1/enroll, a few at a time; returns the enrollments per second.
async function enrollAll(url: string, tokens: string[]): Promise<{ nodes: SimNode[]; perSecond: number }> {
  const nodes: SimNode[] = [];
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < tokens.length) {
      const token = tokens[next++]!;
      const node = generateKeyPairSync('ed25519');
      const helper = generateKeyPairSync('ed25519');
      const pem = (k: KeyObject) => k.export({ format: 'pem', type: 'spki' }).toString();
      const payload = { v: 1, token, nodePublicKey: pem(node.publicKey), helperPublicKey: pem(helper.publicKey), hostname: `sim-${next}`, sentAt: Date.now() };
      const envelope = signEnvelope(DOMAINS.enroll, payload, node.privateKey);
      const helperSig = signPayloadBytes(DOMAINS.enrollHelper, Buffer.from(envelope.payload, 'base64'), helper.privateKey);
      const a = await send(url, ENROLL_PATH, 'POST', Buffer.from(JSON.stringify({ ...envelope, helperSig })));
      if (a.status !== 200) throw new Error(`enroll answered ${a.status}: ${a.raw.toString()}`);
      nodes.push({ nodeId: (JSON.parse(a.raw.toString()) as { nodeId: string }).nodeId, key: node.privateKey, seq: 0 });
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return { nodes, perSecond: tokens.length / ((performance.now() - t0) / 1000) };
}

// One node's next signed heartbeat body, as the agent sends it: one app running, no receipts.
function heartbeatBody(n: SimNode): Buffer {
  const payload = {
    v: 1, nodeId: n.nodeId, seq: ++n.seq, sentAt: Date.now(), bootId: 'boot-1', agentVersion: '0.1.0',
    apps: [{ name: 'web', current: '1.0.0', previous: null, held: false, blocked: false, supervisor: { state: 'running', pid: 4242, attempts: 0, since: Date.now() - 60_000 } }],
    receipts: [],
  };
  return Buffer.from(JSON.stringify(signEnvelope(DOMAINS.heartbeat, payload, n.key)));
}

interface Phase {
  ok: number;
  errors: Map<number, number>;
  perSecond: number;
  p50: number;
  p99: number;
  // CPU seconds per wall second (1 = one core busy) of the server and of the load generator.
  serverCpu: number;
  clientCpu: number;
  // Seconds per wall second the server's main thread was runnable but waited for a CPU.
  serverWait: number;
  // CPU seconds per wall second of the server's main thread alone.
  serverMain: number;
}

// CPU seconds (user + system) a process has used.
function cpuSecondsOf(pid: number): number {
  return cpuMsOf(pid) / 1000;
}

// The main thread of a process, from /proc/<pid>/schedstat: `cpu`, the CPU seconds it has used
// (what one event loop can spend, beside the process's CPU, cpuSecondsOf, that the thread pool
// adds on other cores), and `waited`, the seconds it has waited on a run queue (runnable, no CPU
// free for it: on a machine shared with other work, the part of a phase the server could not run
// at all).
function mainThreadOf(pid: number): { cpu: number; waited: number } {
  const [cpu, waited] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ').map(Number) as [number, number];
  return { cpu: cpu / 1e9, waited: waited / 1e9 };
}

// Sends for `seconds` (or until the bodies run out) over LANES connections spread over the load
// pool's threads; each lane sends its own list one request at a time. Counts only the answers
// with `okStatus`, and measures the CPU of the server and of the load generator meanwhile.
async function runPhase(pool: LoadPool, server: ServeProcess, lanes: LoadRequest[][], seconds: number, okStatus: number): Promise<Phase> {
  const pid = server.child.pid!;
  const cpu0 = cpuSecondsOf(pid);
  const main0 = mainThreadOf(pid);
  const t0 = performance.now();
  const mono0 = process.hrtime.bigint();
  const r = await pool.run(server.urls.listening, lanes, seconds, okStatus);
  phaseWindows.push({ okStatus, seconds, ok: r.ok, startUs: Number(mono0 / 1000n), endUs: Number(process.hrtime.bigint() / 1000n) });
  const wall = (performance.now() - t0) / 1000;
  const serverCpu = (cpuSecondsOf(pid) - cpu0) / wall;
  const main1 = mainThreadOf(pid);
  const serverWait = (main1.waited - main0.waited) / wall;
  const serverMain = (main1.cpu - main0.cpu) / wall;
  return { ok: r.ok, errors: r.errors, perSecond: r.perSecond, p50: quantile(r.latencies, 0.5), p99: quantile(r.latencies, 0.99), serverCpu, serverWait, serverMain, clientCpu: r.clientCpu };
}

// Each phase's window on CLOCK_MONOTONIC in microseconds, the clock of a V8 CPU profile's
// timestamps: with --cpu-prof they are written beside the profile (phases.json), so the server's
// profile can be cut to the heartbeat phases alone (bench/lib/profile-summary.ts).
const phaseWindows: Array<{ okStatus: number; seconds: number; ok: number; startUs: number; endUs: number; open?: number }> = [];

// Signs this run's heartbeats before the clock starts, so the load generator only sends.
function heartbeatQueues(nodes: SimNode[]): LoadRequest[][] {
  const perNode = Math.max(1, Math.floor(MAX_PER_RUN / nodes.length));
  return Array.from({ length: LANES }, (_, lane) => {
    const mine = nodes.filter((_, i) => i % LANES === lane);
    const lanes: LoadRequest[] = [];
    for (let round = 0; round < perNode; round++) for (const n of mine) lanes.push({ p: HEARTBEAT_PATH, method: 'POST', body: heartbeatBody(n) });
    return lanes;
  });
}

// A seeded PRNG (mulberry32): every run offers the same arrival times.
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// An open-loop phase's heartbeats at `rate`/s for `seconds`: Poisson arrivals (the sum of many
// agents each on its own jittered 30 s timer), the nodes in turn, so a node's next heartbeat
// comes NODES arrivals after its last, signed now, before the clock starts.
function openSchedule(nodes: SimNode[], rate: number, seconds: number, seed: number): TimedRequest[] {
  const rand = prng(seed);
  const out: TimedRequest[] = [];
  for (let t = 0, k = 0; ; k++) {
    t += (-Math.log(1 - rand()) * 1000) / rate;
    if (t >= seconds * 1000) return out;
    out.push({ at: t, p: HEARTBEAT_PATH, method: 'POST', body: heartbeatBody(nodes[k % nodes.length]!) });
  }
}

interface OpenStep {
  rate: number;
  offered: number;
  ok: number;
  errors: Map<number, number>;
  achieved: number;
  p50: number;
  p99: number;
  // p99 of how late the generator sent a heartbeat after its scheduled time (part of p99 above).
  lagP99: number;
  serverCpu: number;
  serverMain: number;
  clientCpu: number;
  sustained: boolean;
}

// One open-loop step: offers `rate`/s and waits for every answer.
async function runOpenStep(pool: LoadPool, server: ServeProcess, nodes: SimNode[], rate: number, seed: number, seconds = OPEN_SECONDS): Promise<OpenStep> {
  const sends = openSchedule(nodes, rate, seconds, seed);
  const pid = server.child.pid!;
  const cpu0 = cpuSecondsOf(pid);
  const main0 = mainThreadOf(pid).cpu;
  const mono0 = process.hrtime.bigint();
  const t0 = performance.now();
  const r = await pool.runOpen(server.urls.listening, sends, 200, OPEN_TIMEOUT_MS, KEEP_ALIVE);
  const wall = (performance.now() - t0) / 1000;
  phaseWindows.push({ okStatus: 200, seconds, ok: r.ok, startUs: Number(mono0 / 1000n), endUs: Number(process.hrtime.bigint() / 1000n), open: rate });
  const p99 = quantile(r.latencies, 0.99);
  return {
    rate, offered: sends.length / seconds, ok: r.ok, errors: r.errors, achieved: r.perSecond,
    p50: quantile(r.latencies, 0.5), p99, lagP99: quantile(r.lags, 0.99), serverCpu: (cpuSecondsOf(pid) - cpu0) / wall, serverMain: (mainThreadOf(pid).cpu - main0) / wall, clientCpu: r.clientCpu,
    sustained: r.ok === sends.length && r.errors.size === 0 && p99 <= P99_BOUND_MS,
  };
}

// The rates in turn, up to the first one not sustained (past it the server only falls further behind).
async function openSweep(pool: LoadPool, server: ServeProcess, nodes: SimNode[], run: number): Promise<OpenStep[]> {
  const steps: OpenStep[] = [];
  for (const [i, rate] of RATES.entries()) {
    const step = await runOpenStep(pool, server, nodes, rate, 1 + run * 100 + i);
    steps.push(step);
    if (!step.sustained) break;
  }
  return steps;
}

function trivialQueues(): LoadRequest[][] {
  return Array.from({ length: LANES }, () => Array.from({ length: MAX_PER_RUN / LANES }, () => ({ p: '/v1/bench-trivial', method: 'GET' })));
}

// node:crypto Ed25519 verifies per second of one real heartbeat's signed bytes, in this process.
function rawVerifyRate(n: SimNode, seconds: number): number {
  const signed = heartbeatBody(n);
  const bytes = Buffer.concat([Buffer.from(DOMAINS.heartbeat + '\n'), Buffer.from((JSON.parse(signed.toString()) as { payload: string }).payload, 'base64')]);
  const pair = generateKeyPairSync('ed25519');
  const key = pair.publicKey;
  const sigOwn = sign(null, bytes, pair.privateKey);
  let count = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < seconds * 1000) {
    for (let i = 0; i < 100; i++) if (verify(null, bytes, key, sigOwn)) count++;
  }
  return count / ((performance.now() - t0) / 1000);
}

function errorText(e: Map<number, number>): string {
  return [...e].map(([s, c]) => `${c}x${s}`).join(' ');
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-bench-control-'));
  const db = path.join(dir, 'control.db');
  let server: ServeProcess | null = null;
  const pool = startLoadPool(THREADS);
  try {
    // Tokens straight into the store (the CLI would be a process per token); enrollment itself is real.
    const store = openSqliteStore(db, { create: true });
    const tokens = await store.write(async (tx) => {
      const out: string[] = [];
      for (let i = 0; i < NODES; i++) out.push((await createToken(tx, 3_600_000)).token);
      return out;
    });
    await store.close();
    server = await startServer(db, args.rest['cpu-prof']);
    const { nodes, perSecond: enrollRate } = await enrollAll(server.urls.listening, tokens);
    const hb: Phase[] = [];
    const trivial: Phase[] = [];
    // Warm-up: a short phase of each, not counted.
    await runPhase(pool, server, heartbeatQueues(nodes), 0.3, 200);
    await runPhase(pool, server, trivialQueues(), 0.3, 404);
    // And of the open loop (fresh connections, another path through both sides), at the lowest
    // rate; without it the first sweep's first step paid for the warm-up, seconds of p99 here.
    await runOpenStep(pool, server, nodes, RATES[0]!, 0, 1);
    phaseWindows.length = 0;
    const sweeps: OpenStep[][] = [];
    for (let r = 0; r < RUNS; r++) {
      sweeps.push(await openSweep(pool, server, nodes, r));
      hb.push(await runPhase(pool, server, heartbeatQueues(nodes), SECONDS, 200));
      trivial.push(await runPhase(pool, server, trivialQueues(), SECONDS, 404));
    }
    if (args.rest['cpu-prof']) writeFileSync(path.join(args.rest['cpu-prof'], `phases-${server.child.pid}.json`), JSON.stringify(phaseWindows));
    const verifyRate = rawVerifyRate(nodes[0]!, args.quick ? 0.2 : 1);
    const rates = hb.map((p) => p.perSecond);
    const errs = new Map<number, number>();
    for (const p of hb) for (const [s, c] of p.errors) errs.set(s, (errs.get(s) ?? 0) + c);
    const closed = median(rates);
    // Open loop: per sweep, the highest rate sustained (0 when not even the first was).
    const sustained = sweeps.map((steps) => Math.max(0, ...steps.filter((st) => st.sustained).map((st) => st.rate)));
    const stepText = (st: OpenStep) =>
      `${st.rate}/s: ${Math.round(st.achieved)}/s answered, p50 ${st.p50.toFixed(1)} p99 ${st.p99.toFixed(1)} ms, send lag p99 ${st.lagP99.toFixed(1)} ms, server ${Math.round((st.serverCpu / Math.max(1, st.achieved)) * 1e6)} us/hb (main thread ${Math.round((st.serverMain / Math.max(1, st.achieved)) * 1e6)}), client ${st.clientCpu.toFixed(2)} cores` +
      `${st.errors.size ? `, errors ${errorText(st.errors)}` : ''}${st.ok < Math.round(st.offered * OPEN_SECONDS) ? `, ${st.ok} of ${Math.round(st.offered * OPEN_SECONDS)} ok` : ''}${st.sustained ? '' : ' (not sustained)'}`;
    const atTarget = sweeps.map((steps) => steps.find((st) => st.rate === P99_AT)).filter((st): st is OpenStep => st !== undefined);
    printRow(args, {
      row: '7',
      what: `steward-control verified heartbeats/s sustained open-loop (Poisson arrivals, ${KEEP_ALIVE ? 'pooled keep-alive connections (what-if, not the fleet)' : 'a fresh connection each, as agents send'}; p99 <= ${P99_BOUND_MS} ms, no errors), ${NODES} enrolled nodes, rates ${RATES.join('/')} for ${OPEN_SECONDS} s each`,
      unit: '/s',
      steward: series(sustained),
      target: `>= ${TARGET}/s`,
      met: median(sustained) >= TARGET,
      notes: `per sweep: ${sweeps.map((steps, i) => `[${i + 1}] ${steps.map(stepText).join('; ')}`).join(' | ')}; closed loop beside it (row 7 closed): ${Math.round(closed)}/s`,
    });
    if (atTarget.length) {
      const p99s = atTarget.map((st) => st.p99);
      printRow(args, {
        row: '7 p99',
        what: `steward-control heartbeat p99 latency offered ${P99_AT}/s open-loop, from the scheduled send (p50 ${median(atTarget.map((st) => st.p50)).toFixed(2)} ms)`,
        unit: 'ms',
        steward: series(p99s),
        target: `<= ${P99_BOUND_MS} ms`,
        met: median(p99s) <= P99_BOUND_MS,
        notes: `server CPU ${Math.round(median(atTarget.map((st) => (st.serverCpu / Math.max(1, st.achieved)) * 1e6)))} us a heartbeat at ${P99_AT}/s offered`,
      });
    }
    const trivialRates = trivial.map((p) => p.perSecond);
    printRow(args, {
      row: '7 closed',
      what: `steward-control verified heartbeats/s closed-loop (each of ${LANES} keep-alive connections sends again as soon as answered), ${NODES} enrolled nodes, ${THREADS} load threads, ${SECONDS} s per run`,
      unit: '/s',
      steward: series(rates),
      peer: series(trivialRates),
      peerWhat: 'the same server answering GET of an unknown path (404)',
      ratio: series(ratiosOf(rates, trivialRates)),
      target: 'none (reported beside row 7)',
      met: errs.size === 0,
      notes: `raw Ed25519 verify ${Math.round(verifyRate)}/s on one core of the load generator; ` +
        `enrollment ${Math.round(enrollRate)}/s; CPU during the heartbeat runs (cores): server ${median(hb.map((p) => p.serverCpu)).toFixed(2)} ` +
        `(${Math.round(median(hb.map((p) => (p.serverCpu / p.perSecond) * 1e6)))} us a heartbeat, ${Math.round(median(hb.map((p) => (p.serverMain / p.perSecond) * 1e6)))} us of it on the main thread; its main thread waited for a CPU ${median(hb.map((p) => p.serverWait)).toFixed(2)} s/s), ` +
        `load generator ${median(hb.map((p) => p.clientCpu)).toFixed(2)}${errs.size ? `; errors ${errorText(errs)}` : ''}`,
    });
    const p99s = hb.map((p) => p.p99);
    const trivialP99s = trivial.map((p) => p.p99);
    printRow(args, {
      row: '7 closed p99',
      what: `steward-control heartbeat p99 latency closed-loop at full load (p50 ${median(hb.map((p) => p.p50)).toFixed(2)} ms)`,
      unit: 'ms',
      steward: series(p99s),
      peer: series(trivialP99s),
      peerWhat: `p99 of the trivial 404 at full load (p50 ${median(trivial.map((p) => p.p50)).toFixed(2)} ms)`,
      ratio: series(ratiosOf(p99s, trivialP99s)),
      target: 'none (reported)',
      met: true,
      notes: `${LANES} requests in flight`,
    });
  } finally {
    agent.destroy();
    await pool.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

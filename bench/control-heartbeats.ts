// Row 7 of issue 8: verified heartbeats per second through `steward-control serve` (SQLite), from
// many simulated nodes with real Ed25519 keys over loopback, with p50/p99 latency. The peer, in
// the same run and through the same server, connections and client: a trivial request the server
// answers without a body, a store or a signature (GET of an unknown path, a 404). See bench/README.md.
//
// The load generator runs in worker threads (bench/lib/http-load.ts): one thread of node:http
// could not send faster than the server answered.
//
//   node dist/bench/control-heartbeats.js [--quick] [--json] [--nodes N] [--seconds S] [--threads T] [--cpu-prof DIR]
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ENROLL_PATH, HEARTBEAT_PATH } from '../src/core/control-api.js';
import { openStore } from '../src/control/store/open-store.js';
import { createToken } from '../src/control/store/tokens.js';
import { DOMAINS, signEnvelope } from '../src/platform/keys.js';
import { startLoadPool, type LoadPool, type LoadRequest } from './lib/http-load.js';
import { median, parseBenchArgs, printRow, quantile } from './lib/row.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const TARGET = 2000;

const args = parseBenchArgs(process.argv.slice(2), ['--nodes', '--seconds', '--threads', '--connections', '--cpu-prof']);
const NODES = Number(args.rest.nodes ?? (args.quick ? 40 : 500));
const SECONDS = Number(args.rest.seconds ?? (args.quick ? 1 : 6));
const RUNS = args.quick ? 1 : 3;
// Load generator threads: one per core by default.
const THREADS = Number(args.rest.threads ?? Math.max(1, Math.min(4, os.availableParallelism())));
// Concurrent keep-alive connections, each a lane of nodes sent in turn (a node's seqs stay in order).
const LANES = Math.min(Number(args.rest.connections ?? 32), NODES);
if (!Number.isInteger(LANES) || LANES < 1) throw new Error(`--connections must be a positive integer`);
// A bound on the requests of one timed phase whatever the server's speed.
const MAX_PER_RUN = args.quick ? 4000 : 40_000;

interface SimNode {
  nodeId: string;
  key: KeyObject;
  seq: number;
}

// Starts `steward-control serve` on 127.0.0.1 port 0 as its own process and waits for its URL.
async function startServer(db: string, profDir?: string): Promise<{ child: ChildProcess; url: string }> {
  const prof = profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [];
  const child = spawn(process.execPath, [...prof, path.join(root, 'bin', 'steward-control.js'), '--db', db, '--json', 'serve', '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Its log (one line per enrollment) is kept, the last part only, for a failure's message.
  let log = '';
  child.stderr!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-4000)));
  const first = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`steward-control serve exited ${code} before listening: ${log}`)));
  });
  return { child, url: (JSON.parse(first) as { listening: string }).listening };
}

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
      const a = await send(url, ENROLL_PATH, 'POST', Buffer.from(JSON.stringify(signEnvelope(DOMAINS.enroll, payload, node.privateKey))));
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
}

// CPU seconds (user + system) a process has used, from /proc/<pid>/stat.
function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

// Nanoseconds the main thread of a process has waited on a run queue (runnable, no CPU free for
// it), from /proc/<pid>/schedstat: on a machine shared with other work, the part of a phase the
// server could not run at all.
function runQueueWaitOf(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]);
}

// Sends for `seconds` (or until the bodies run out) over LANES connections spread over the load
// pool's threads; each lane sends its own list one request at a time. Counts only the answers
// with `okStatus`, and measures the CPU of the server and of the load generator meanwhile.
async function runPhase(pool: LoadPool, server: { child: ChildProcess; url: string }, lanes: LoadRequest[][], seconds: number, okStatus: number): Promise<Phase> {
  const pid = server.child.pid!;
  const cpu0 = cpuSecondsOf(pid);
  const wait0 = runQueueWaitOf(pid);
  const t0 = performance.now();
  const r = await pool.run(server.url, lanes, seconds, okStatus);
  const wall = (performance.now() - t0) / 1000;
  const serverCpu = (cpuSecondsOf(pid) - cpu0) / wall;
  const serverWait = (runQueueWaitOf(pid) - wait0) / 1e9 / wall;
  return { ok: r.ok, errors: r.errors, perSecond: r.perSecond, p50: quantile(r.latencies, 0.5), p99: quantile(r.latencies, 0.99), serverCpu, serverWait, clientCpu: r.clientCpu };
}

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
  let server: { child: ChildProcess; url: string } | null = null;
  const pool = startLoadPool(THREADS);
  try {
    // Tokens straight into the store (the CLI would be a process per token); enrollment itself is real.
    const store = openStore(db);
    const tokens = store.write(() => Array.from({ length: NODES }, () => createToken(store, Date.now(), 3_600_000).token));
    store.close();
    server = await startServer(db, args.rest['cpu-prof']);
    const { nodes, perSecond: enrollRate } = await enrollAll(server.url, tokens);
    const hb: Phase[] = [];
    const trivial: Phase[] = [];
    // Warm-up: a short phase of each, not counted.
    await runPhase(pool, server, heartbeatQueues(nodes), 0.3, 200);
    await runPhase(pool, server, trivialQueues(), 0.3, 404);
    for (let r = 0; r < RUNS; r++) {
      hb.push(await runPhase(pool, server, heartbeatQueues(nodes), SECONDS, 200));
      trivial.push(await runPhase(pool, server, trivialQueues(), SECONDS, 404));
    }
    const verifyRate = rawVerifyRate(nodes[0]!, args.quick ? 0.2 : 1);
    const rates = hb.map((p) => p.perSecond);
    const ratios = hb.map((p, i) => p.perSecond / trivial[i]!.perSecond);
    const errs = new Map<number, number>();
    for (const p of hb) for (const [s, c] of p.errors) errs.set(s, (errs.get(s) ?? 0) + c);
    const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
    const steward = median(rates);
    printRow({
      row: '7',
      what: `steward-control verified heartbeats/s, ${NODES} enrolled nodes, ${LANES} keep-alive connections from ${THREADS} load threads, ${SECONDS} s per run`,
      steward, peer: median(trivial.map((p) => p.perSecond)), ratio: median(ratios),
      target: `>= ${TARGET}/s`, met: steward >= TARGET && errs.size === 0, unit: '/s', runs: RUNS, min: Math.min(...rates), max: Math.max(...rates),
      notes: `peer: the same server answering GET of an unknown path (404); raw Ed25519 verify ${Math.round(verifyRate)}/s on one core of the load generator; ` +
        `enrollment ${Math.round(enrollRate)}/s; CPU during the heartbeat runs (cores): server ${median(hb.map((p) => p.serverCpu)).toFixed(2)} ` +
        `(${Math.round(median(hb.map((p) => (p.serverCpu / p.perSecond) * 1e6)))} us a heartbeat; its main thread waited for a CPU ${median(hb.map((p) => p.serverWait)).toFixed(2)} s/s), ` +
        `load generator ${median(hb.map((p) => p.clientCpu)).toFixed(2)}; ${errs.size ? `errors ${errorText(errs)}; ` : ''}load ${load}`,
    }, args.json);
    const p99s = hb.map((p) => p.p99);
    printRow({
      row: '7 p99',
      what: `steward-control heartbeat p99 latency at full load (p50 ${median(hb.map((p) => p.p50)).toFixed(2)} ms)`,
      steward: median(p99s), peer: median(trivial.map((p) => p.p99)), ratio: median(hb.map((p, i) => p.p99 / trivial[i]!.p99)),
      target: 'none (reported)', met: true, unit: 'ms', runs: RUNS, min: Math.min(...p99s), max: Math.max(...p99s),
      notes: `peer: p99 of the trivial 404 at full load (p50 ${median(trivial.map((p) => p.p50)).toFixed(2)} ms); ${LANES} requests in flight`,
    }, args.json);
  } finally {
    agent.destroy();
    await pool.close();
    if (server) {
      const exited = new Promise((r) => server!.child.once('exit', r));
      server.child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

// docs/design.md §13's rows: steward-control on PostgreSQL, one and two `serve` instances on one
// database, each figure beside the SQLite one measured in the same run.
//   13 hb pg1 / 13 hb pg2 (and their p99): verified heartbeats per second, closed loop over
//     keep-alive connections, through one instance and through two (the nodes split between
//     them); the peer is one instance on SQLite.
//   13 halt: from the POST of a canary's `rolled-back` receipt to instance A until instance B's
//     admin API shows the run `halted`; the peer is the same on SQLite's one instance.
//   13 rollout: a simulated rollout of web over N nodes (100,000; quick 2,000) through two
//     instances, one canary then 10 % batches, no bake: each issued node heartbeats for its
//     attempt and again with its `active` receipt, each on a fresh connection as agents send (real Ed25519 node keys, one per node, and a
//     helper key shared by all: every signature is made and verified). Wall time, heartbeats,
//     and the servers' CPU per heartbeat (their ticks included). Bounded by --budget-seconds:
//     past it the row reports how far the run got.
//   13 wake: an online node's wake-up latency (docs/design.md §18): the node holds `GET /v1/wait` on
//     instance B; this process (another instance) commits a change of its desired set through
//     desiredChanged, the seam a run's issue goes through; the time until B answers the wait.
// The PostgreSQL cluster is the tests' throwaway one (test/helpers/postgres.ts): fsync off, so
// its commits cost no disk flush, where SQLite's server fdatasyncs its WAL. See bench/README.md.
//
//   node dist/bench/control-postgres.js [--quick] [--json] [--runs N] [--nodes N] [--seconds S] [--rollout-nodes N] [--budget-seconds S]
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HEARTBEAT_PATH, WAIT_PATH } from '../src/core/control-api.js';
import { addRelease } from '../src/control/catalog/add-release.js';
import { hashSecret, mintOperatorToken } from '../src/control/operators/operator-tokens.js';
import { desiredChanged } from '../src/control/rollouts/desired-changed.js';
import { startRun } from '../src/control/rollouts/start-run.js';
import { migrateStore, openStore } from '../src/control/store/open-store.js';
import type { ControlStore } from '../src/control/store/store.js';
import { DOMAINS, generateKeyPair, signEnvelope } from '../src/platform/keys.js';
import { waitAuthorization } from '../src/platform/wait-auth.js';
import { postgresMissing, startPostgresCluster, type PgCluster } from '../test/helpers/postgres.js';
import { startServeProcess, type ServeProcess } from '../test/helpers/serve-process.js';
import { startLoadPool, type LoadRequest, type LoadResult } from './lib/http-load.js';
import { benchArgs, cpuMsOf, median, note, printRow, quantile, ratios, series } from './lib.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(root, 'bin', 'steward-control.js');
const args = benchArgs(3, 1, ['--nodes', '--seconds', '--rollout-nodes', '--budget-seconds']);
const NODES = Number(args.rest.nodes ?? (args.quick ? 100 : 2000));
// --quick only keeps the script working (CI): half-second phases and no warm-up.
const SECONDS = Number(args.rest.seconds ?? (args.quick ? 0.5 : 5));
const ROLLOUT_NODES = Number(args.rest['rollout-nodes'] ?? (args.quick ? 300 : 100_000));
const BUDGET_S = Number(args.rest['budget-seconds'] ?? (args.quick ? 6 : 900));
const LANES = 16;
const HALT_RUNS = args.quick ? 2 : 5;
const WAKE_RUNS = args.quick ? 3 : 20;

interface SimNode {
  nodeId: string;
  key: KeyObject;
  seq: number;
  receiptSeq: number;
}


const helper = generateKeyPairSync('ed25519');
const pem = (k: KeyObject) => k.export({ format: 'pem', type: 'spki' }).toString();
const HELPER_PEM = pem(helper.publicKey);
const app = (current: string) => ({ name: 'web', current, previous: null, held: false, blocked: false, supervisor: { state: 'running' as const, attempts: 0, since: Date.now() - 60_000 } });

// `steward-control serve` as its own process, with its admin API.
const startServe = (db: string, dir: string, heartbeatSeconds: number): Promise<ServeProcess> =>
  startServeProcess(db, ['--admin-listen', '127.0.0.1:0', '--artifacts', path.join(dir, 'artifacts'), '--heartbeat-seconds', String(heartbeatSeconds)], { bin: BIN });

// `n` nodes written straight into the store (enrollment is not what these rows measure), each
// with its own node key and a heartbeat now reporting web 1.0.0; a viewer's token; web 1.1.k.
async function seedFleet(store: ControlStore, n: number, dir: string, versions: number): Promise<{ nodes: SimNode[]; token: string }> {
  const keys = Array.from({ length: n }, () => generateKeyPairSync('ed25519'));
  const nodes: SimNode[] = keys.map((k, i) => ({ nodeId: `n-${String(i).padStart(9, '0')}`, key: k.privateKey, seq: 1, receiptSeq: 0 }));
  for (let at = 0; at < n; at += 1000) {
    await store.write(async (tx) => {
      const now = await tx.now();
      for (let i = at; i < Math.min(n, at + 1000); i++) {
        const nodeId = nodes[i]!.nodeId;
        await tx.nodes.insert({ nodeId, hostname: nodeId, nodePublicKey: pem(keys[i]!.publicKey), helperPublicKey: HELPER_PEM, enrolledAt: now, labels: {} });
        await tx.nodes.recordHeartbeat({ v: 1, nodeId, seq: 1, sentAt: now, bootId: 'b', agentVersion: '0.1.0', apps: [app('1.0.0')], receipts: [] }, now);
      }
    });
  }
  const token = mintOperatorToken();
  await store.write((tx) => tx.operators.insert({ name: 'bench', role: 'viewer', tokenHash: hashSecret(token), createdAt: Date.now(), rotatedAt: null }));
  const key = generateKeyPair();
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'web.tgz');
  writeFileSync(file, 'tarball of web');
  for (let v = 0; v < versions; v++) {
    await addRelease(store, { app: 'web', version: `1.1.${v}`, file, url: null, baseUrl: 'http://127.0.0.1:1', privateKeyPem: key.privatePem, expiresDays: 30, artifactsDir: path.join(dir, 'artifacts') });
  }
  return { nodes, token };
}

function heartbeatBody(n: SimNode, current: string, receipts: unknown[] = []): Buffer {
  const payload = { v: 1, nodeId: n.nodeId, seq: ++n.seq, sentAt: Date.now(), bootId: 'b', agentVersion: '0.1.0', apps: [app(current)], receipts };
  return Buffer.from(JSON.stringify(signEnvelope(DOMAINS.heartbeat, payload, n.key)));
}

function receipt(n: SimNode, attemptId: string, version: string, outcome: 'active' | 'rolled-back') {
  const now = Date.now();
  return signEnvelope(DOMAINS.receipt, {
    v: 1, nodeId: n.nodeId, app: 'web', attemptId, seq: ++n.receiptSeq, fromVersion: '1.0.0', targetVersion: version, integrity: null, outcome, startedAt: now - 1000, updatedAt: now,
    ...(outcome === 'rolled-back' ? { reason: { code: 'REPLACEMENT_UNHEALTHY', message: 'bench' } } : {}),
  }, helper.privateKey);
}

// A fresh connection for each heartbeat, as the agent sends them (src/agent's client: agent false).
const agent = new http.Agent({ keepAlive: false, maxSockets: 64 });
function post(url: string, p: string, body: Buffer): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url + p, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
async function getJson(url: string, token: string): Promise<any> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  return res.json();
}

// Closed loop through `servers`: the nodes dealt to them in turn, LANES lanes in all, for SECONDS.
async function heartbeatPhase(servers: ServeProcess[], nodes: SimNode[]): Promise<{ perSecond: number; p99: number; cpuUsPerHb: number }> {
  const perServer = servers.map((s, si) => {
    const mine = nodes.filter((_, i) => i % servers.length === si);
    const lanes = LANES / servers.length;
    const rounds = Math.max(1, Math.floor((args.quick ? 1000 : 20_000) / nodes.length));
    return Array.from({ length: lanes }, (_, l) => {
      const q: LoadRequest[] = [];
      const laneNodes = mine.filter((_, i) => i % lanes === l);
      for (let r = 0; r < rounds; r++) for (const n of laneNodes) q.push({ p: HEARTBEAT_PATH, method: 'POST', body: heartbeatBody(n, '1.0.0') });
      return q;
    });
  });
  const pools = servers.map(() => startLoadPool(1));
  try {
    const cpu0 = servers.map((s) => cpuMsOf(s.child.pid!));
    const results: LoadResult[] = await Promise.all(servers.map((s, i) => pools[i]!.run(s.urls.listening, perServer[i]!, SECONDS, 200)));
    const cpuMs = servers.reduce((sum, s, i) => sum + cpuMsOf(s.child.pid!) - cpu0[i]!, 0);
    const ok = results.reduce((s, r) => s + r.ok, 0);
    const errors = results.flatMap((r) => [...r.errors]);
    if (errors.length) throw new Error(`heartbeats answered other than 200: ${JSON.stringify(errors)}`);
    return { perSecond: results.reduce((s, r) => s + r.perSecond, 0), p99: quantile(results.flatMap((r) => r.latencies), 0.99), cpuUsPerHb: (cpuMs * 1000) / ok };
  } finally {
    await Promise.all(pools.map((p) => p.close()));
  }
}

// Canary reverts: from the POST of its rolled-back receipt to `via` until `watch` shows the run halted.
async function haltTimes(store: ControlStore, nodes: SimNode[], via: ServeProcess, watch: ServeProcess, token: string): Promise<number[]> {
  const out: number[] = [];
  for (let k = 0; k < HALT_RUNS; k++) {
    const canary = nodes[k]!;
    const version = `1.1.${k}`;
    const run = await startRun(store, 'web', version, { canary: [canary.nodeId], batch: '10%', bakeMs: 0 });
    const [issued] = await store.read((tx) => tx.runs.issued(run.id));
    const t0 = performance.now();
    const revert = receipt(canary, issued!.attemptId, version, 'rolled-back');
    const a = await post(via.urls.listening, HEARTBEAT_PATH, heartbeatBody(canary, '1.0.0', [revert]));
    if (a.status !== 200) throw new Error(`revert heartbeat answered ${a.status}: ${JSON.stringify(a.body)}`);
    for (;;) {
      const s = await getJson(`${watch.urls.admin}/v1/admin/rollout/status?app=web`, token);
      if (s.runs?.[0]?.id === run.id && s.runs[0].status === 'halted') break;
      if (performance.now() - t0 > 30_000) throw new Error(`run ${run.id} not halted within 30 s: ${JSON.stringify(s).slice(0, 300)}`);
      await new Promise((r) => setTimeout(r, 2));
    }
    out.push(performance.now() - t0);
  }
  return out;
}

// Wake-up latencies: for each of WAKE_RUNS nodes (after the halt rows' canaries), a wait held on
// `via`, then a change of that node's desired set committed here; ms until the wait's answer.
async function wakeTimes(store: ControlStore, nodes: SimNode[], via: ServeProcess): Promise<number[]> {
  const out: number[] = [];
  for (let k = 0; k < WAKE_RUNS; k++) {
    const n = nodes[HALT_RUNS + k]!;
    let answeredAt = 0;
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.get(`${via.urls.listening}${WAIT_PATH}?timeout=30`, { agent: false, headers: { authorization: waitAuthorization(n.nodeId, Date.now() + 600_000, n.key) } }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => {
          answeredAt = performance.now();
          resolve({ status: res.statusCode ?? 0, body });
        });
      });
      req.on('error', reject);
    });
    await new Promise((r) => setTimeout(r, 100));
    if (answeredAt !== 0) throw new Error(`the wait of ${n.nodeId} was answered before any change: ${JSON.stringify(await answer)}`);
    const t0 = performance.now();
    await store.write((tx) => desiredChanged(tx, [n.nodeId]));
    const a = await answer;
    if (a.status !== 200 || JSON.parse(a.body).woken !== true) throw new Error(`the wait of ${n.nodeId} was answered ${a.status} ${a.body}`);
    out.push(answeredAt - t0);
  }
  return out;
}

// The simulated rollout through `servers`: returns its figures, or how far it got within the budget.
async function simulatedRollout(store: ControlStore, nodes: SimNode[], servers: ServeProcess[]): Promise<{ wallS: number; heartbeats: number; busy: number; cpuUsPerHb: number; confirmed: number; done: boolean; ticksCpuMs: number }> {
  const byId = new Map(nodes.map((n, i) => [n.nodeId, { n, server: servers[i % servers.length]! }]));
  const cpu0 = servers.map((s) => cpuMsOf(s.child.pid!));
  const t0 = performance.now();
  const run = await startRun(store, 'web', '1.1.0', { canary: [nodes[0]!.nodeId], batch: '10%', bakeMs: 0 });
  const answered = new Set<string>();
  let heartbeats = 0;
  let busy = 0;
  // A heartbeat as an agent sends it: a 503 (the database kept refusing the commit, nothing
  // recorded) is sent again, with the next seq, after its Retry-After.
  const heartbeat = async (server: ServeProcess, body: () => Buffer) => {
    for (;;) {
      const a = await post(server.urls.listening, HEARTBEAT_PATH, body());
      if (a.status !== 503) return a;
      busy++;
      await new Promise((r) => setTimeout(r, 1000));
    }
  };
  let done = false;
  while (performance.now() - t0 < BUDGET_S * 1000) {
    const { status, issued } = await store.read(async (tx) => ({ status: (await tx.runs.get(run.id))!.status, issued: await tx.runs.issued(run.id) }));
    if (status !== 'running') {
      done = status === 'succeeded';
      break;
    }
    const open = issued.filter((i) => !answered.has(i.attemptId));
    if (open.length === 0) {
      // The ticker issues the next batch after its pause; reading every issued row more often
      // than this would load the database the instances share.
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    let next = 0;
    const worker = async () => {
      while (next < open.length && performance.now() - t0 < BUDGET_S * 1000) {
        const i = open[next++]!;
        const { n, server } = byId.get(i.nodeId)!;
        // The heartbeat that learns the attempt, then the one that brings its verdict.
        const first = await heartbeat(server, () => heartbeatBody(n, '1.0.0'));
        const d = (first.body?.desired ?? []).find((x: { attemptId: string }) => x.attemptId === i.attemptId);
        if (first.status !== 200 || !d) throw new Error(`node ${n.nodeId} was not sent ${i.attemptId}: ${first.status} ${JSON.stringify(first.body).slice(0, 300)}\n${server.log()}`);
        const verdict = receipt(n, i.attemptId, '1.1.0', 'active');
        const second = await heartbeat(server, () => heartbeatBody(n, '1.1.0', [verdict]));
        if (second.status !== 200) throw new Error(`verdict heartbeat answered ${second.status}: ${JSON.stringify(second.body).slice(0, 300)}\n${server.log()}`);
        heartbeats += 2;
        answered.add(i.attemptId);
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
  }
  const wallS = (performance.now() - t0) / 1000;
  const cpuMs = servers.reduce((sum, s, i) => sum + cpuMsOf(s.child.pid!) - cpu0[i]!, 0);
  return { wallS, heartbeats, busy, cpuUsPerHb: (cpuMs * 1000) / Math.max(1, heartbeats), confirmed: answered.size, done, ticksCpuMs: cpuMs };
}

async function main(): Promise<void> {
  const missing = postgresMissing();
  if (missing && process.env.CI === 'true') throw new Error(`control-postgres needs PostgreSQL: ${missing}`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-bench-pg-'));
  if (missing) return sqliteOnly(dir, missing);
  let cluster: PgCluster | null = null;
  const serves: ServeProcess[] = [];
  const stores: ControlStore[] = [];
  try {
    cluster = await startPostgresCluster();
    // Stopped by a signal (a long run given up): leave no instance and no cluster behind.
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      process.once(sig, () => {
        for (const s of serves) s.child.kill('SIGKILL');
        void (cluster?.stop() ?? Promise.resolve()).finally(() => {
          rmSync(dir, { recursive: true, force: true });
          process.exit(128 + (sig === 'SIGINT' ? 2 : 15));
        });
      });
    }
    const sqliteDb = path.join(dir, 'control.db');
    await migrateStore(sqliteDb, { create: true });
    const pgDb = await cluster.createDatabase();
    await migrateStore(pgDb);
    const lite = await openStore(sqliteDb);
    const pg = await openStore(pgDb);
    stores.push(lite, pg);
    note(args, `control-postgres: ${NODES} nodes into each store`);
    const liteFleet = await seedFleet(lite, NODES, path.join(dir, 'lite'), HALT_RUNS);
    const pgFleet = await seedFleet(pg, NODES, path.join(dir, 'pg'), HALT_RUNS);
    const s0 = await startServe(sqliteDb, path.join(dir, 'lite'), 3600);
    serves.push(s0);
    const [a, b] = [await startServe(pgDb, path.join(dir, 'pg'), 3600), await startServe(pgDb, path.join(dir, 'pg'), 3600)];
    serves.push(a!, b!);
    // Warm-up, not counted.
    if (!args.quick) {
      await heartbeatPhase([s0], liteFleet.nodes);
      await heartbeatPhase([a!], pgFleet.nodes);
    }
    const phases = { lite: [] as Array<Awaited<ReturnType<typeof heartbeatPhase>>>, pg1: [] as Array<Awaited<ReturnType<typeof heartbeatPhase>>>, pg2: [] as Array<Awaited<ReturnType<typeof heartbeatPhase>>> };
    for (let r = 0; r < args.runs; r++) {
      phases.lite.push(await heartbeatPhase([s0], liteFleet.nodes));
      phases.pg1.push(await heartbeatPhase([a!], pgFleet.nodes));
      phases.pg2.push(await heartbeatPhase([a!, b!], pgFleet.nodes));
    }
    const rate = (k: keyof typeof phases) => phases[k].map((p) => p.perSecond);
    const p99 = (k: keyof typeof phases) => phases[k].map((p) => p.p99);
    const cpu = (k: keyof typeof phases) => Math.round(median(phases[k].map((p) => p.cpuUsPerHb)));
    for (const [k, label] of [['pg1', 'one instance'], ['pg2', 'two instances, the nodes split between them']] as const) {
      printRow(args, {
        row: `13 hb ${k}`,
        what: `verified heartbeats/s on PostgreSQL, ${label}, closed loop (${LANES} keep-alive connections), ${NODES} nodes, ${SECONDS} s a run`,
        unit: '/s', steward: series(rate(k)), peer: series(rate('lite')), peerWhat: 'one instance on SQLite, same run', ratio: series(ratios(rate(k), rate('lite'))),
        target: 'none (reported; sizes the fleet in README)', met: true,
        notes: `server CPU a heartbeat: ${cpu(k)} us (SQLite ${cpu('lite')} us); PostgreSQL runs with fsync off (the tests' cluster), SQLite fdatasyncs`,
      });
      printRow(args, {
        row: `13 hb ${k} p99`, what: `heartbeat p99 latency on PostgreSQL, ${label}, closed loop`, unit: 'ms',
        steward: series(p99(k)), peer: series(p99('lite')), peerWhat: 'SQLite, same run', ratio: series(ratios(p99(k), p99('lite'))), target: 'none (reported)', met: true,
      });
    }
    const pgHalt = await haltTimes(pg, pgFleet.nodes, a!, b!, pgFleet.token);
    const liteHalt = await haltTimes(lite, liteFleet.nodes, s0, s0, liteFleet.token);
    printRow(args, {
      row: '13 halt', what: `a canary's revert POSTed to instance A until instance B's admin API shows the run halted (PostgreSQL, ${NODES} nodes)`, unit: 'ms',
      steward: series(pgHalt), peer: series(liteHalt), peerWhat: "SQLite's one instance, the revert and the status through it", ratio: series(ratios(pgHalt, liteHalt)), target: 'none (reported)', met: true,
    });
    const wakes = await wakeTimes(pg, pgFleet.nodes, b!);
    printRow(args, {
      row: '13 wake', what: `an online node's wake-up: a change of its desired set committed by another instance until instance B answers the wait the node holds there (PostgreSQL NOTIFY, ${NODES} nodes)`, unit: 'ms',
      steward: series(wakes), target: 'under 2,000 ms (an online node hears of a change within 2 s)', met: Math.max(...wakes) < 2_000,
      notes: 'the commit is timed from its start; the wait answers `{woken: true}`, and the node then heartbeats',
    });
    // The rollout: a database of its own, two instances.
    await Promise.all(serves.splice(0).map((s) => s.stop()));
    const rolloutDb = await cluster.createDatabase();
    await migrateStore(rolloutDb);
    const rs = await openStore(rolloutDb);
    stores.push(rs);
    note(args, `control-postgres: ${ROLLOUT_NODES} nodes for the simulated rollout`);
    const t = performance.now();
    const fleet = await seedFleet(rs, ROLLOUT_NODES, path.join(dir, 'rollout'), 1);
    const seedS = (performance.now() - t) / 1000;
    const two = [await startServe(rolloutDb, path.join(dir, 'rollout'), 3600), await startServe(rolloutDb, path.join(dir, 'rollout'), 3600)];
    serves.push(...two);
    const r = await simulatedRollout(rs, fleet.nodes, two);
    printRow(args, {
      row: '13 rollout', what: `a simulated rollout over ${ROLLOUT_NODES} nodes through two instances on PostgreSQL, 1 canary then 10 % batches, no bake${r.done ? '' : ` (NOT finished within ${BUDGET_S} s: ${r.confirmed} nodes confirmed)`}`, unit: 's',
      steward: series([r.wallS]), target: 'none (reported; sizes the fleet in README)', met: r.done,
      extra: { heartbeats: r.heartbeats, 'heartbeats/s': r.heartbeats / r.wallS, 'server CPU us a heartbeat (ticks included)': r.cpuUsPerHb, confirmed: r.confirmed, 'answered 503 BUSY and sent again': r.busy, 'seeding s': seedS },
    });
  } finally {
    agent.destroy();
    await Promise.all(serves.map((s) => s.stop()));
    for (const s of stores) await s.close();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

// Without PostgreSQL (outside CI): the SQLite figure alone, saying why the others are missing.
async function sqliteOnly(dir: string, missing: string): Promise<void> {
  const db = path.join(dir, 'control.db');
  let serve: ServeProcess | null = null;
  try {
    await migrateStore(db, { create: true });
    const store = await openStore(db);
    const fleet = await seedFleet(store, NODES, path.join(dir, 'lite'), 0);
    await store.close();
    serve = await startServe(db, path.join(dir, 'lite'), 3600);
    const phases = [];
    for (let r = 0; r < args.runs; r++) phases.push(await heartbeatPhase([serve], fleet.nodes));
    printRow(args, {
      row: '13 hb sqlite', what: `verified heartbeats/s on SQLite, closed loop (${LANES} keep-alive connections), ${NODES} nodes: the peer of rows 13 alone`, unit: '/s',
      steward: series(phases.map((p) => p.perSecond)), target: 'none (reported)', met: true, notes: `the PostgreSQL rows were not measured: ${missing}`,
    });
  } finally {
    await serve?.stop();
    agent.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

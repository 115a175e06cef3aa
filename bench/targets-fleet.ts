// docs/design.md §18's benchmark (issue 33): a fleet of N nodes (10,000; quick 1,000) in 5 label groups,
// each group with a target of web, on the real control-plane server (in this process: HTTP, the
// heartbeat group commit, the real rollout ticker and its target reconcile, the wake-up waits).
//   33 converge: LATE nodes (100) enrolled after the targets were set, over the real
//     `POST /v1/enroll` with tokens carrying their group's label, each then run by the real
//     agent's heartbeat loop with its wake-up waits (bench/lib/converging-agent.ts) in front of a
//     simulated helper that installs at once. From each node's enrollment until the control plane
//     records it running its target's version, in heartbeat intervals; no operator action.
//   33 status: `target status NAME` of each target and `target list`, the operations the CLI and
//     the admin API run, with the JSON they answer, against the whole store.
//   33 wake: `target set` of a new version for one group's target (its run has no canaries), on a
//     quiet fleet: from the call until each node of the group has the new entry in a heartbeat's
//     answer.
//   33 requests: the requests each late node sends per heartbeat interval in a quiet window:
//     heartbeats (each held for its interval), and any wake-up waits (none against this server).
//   33 wake cli: one more round of 33 wake through the local CLI (`steward-control --db ...
//     target set`), a process of its own beside the server.
// The N steady nodes are written straight into the store, already at their target's version and
// never heartbeating: a steady fleet whose heartbeats row 7 measures (see bench/README.md).
//
//   node dist/bench/targets-fleet.js [--quick] [--json] [--runs N] [--nodes N] [--late N]
//     [--heartbeat-seconds S] [--apps one|per-group] [--window-intervals K] [--wake-rounds R]
//     [--store sqlite|postgres]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import path from 'node:path';
import { addRelease } from '../src/control/catalog/add-release.js';
import { createToken } from '../src/control/enroll/tokens.js';
import { runOperation, type OpContext } from '../src/control/operations/operation.js';
import { targetList, targetSet, targetStatus } from '../src/control/operations/target-ops.js';
import { startControlServer, type ControlServer } from '../src/control/server/control-server.js';
import { migrateStore, openStore } from '../src/control/store/open-store.js';
import type { ControlStore } from '../src/control/store/store.js';
import { systemClock } from '../src/platform/clock.js';
import { generateKeyPair } from '../src/platform/keys.js';
import { FakeNode } from '../test/helpers/control-harness.js';
import { controlCli } from '../test/helpers/fleet.js';
import { postgresMissing, startPostgresCluster, type PgCluster } from '../test/helpers/postgres.js';
import { startConvergingAgent, type ConvergingAgent } from './lib/converging-agent.js';
import { benchArgs, median, note, printRow, series } from './lib.js';

const args = benchArgs(5, 3, ['--nodes', '--late', '--heartbeat-seconds', '--window-intervals', '--wake-rounds', '--store', '--apps']);
const NODES = Number(args.rest.nodes ?? (args.quick ? 1000 : 10_000));
const LATE = Number(args.rest.late ?? 100);
// Why not 1 s: an agent holds no wait when less than 2 s is left before its next heartbeat
// (src/agent/wake-wait.ts MIN_WAIT_MS), so at 1 s nodes would only heartbeat.
const HB_S = Number(args.rest['heartbeat-seconds'] ?? (args.quick ? 3 : 5));
const WINDOW_INTERVALS = Number(args.rest['window-intervals'] ?? (args.quick ? 1 : 6));
const WAKE_ROUNDS = Number(args.rest['wake-rounds'] ?? (args.quick ? 1 : 5));
const STORE = args.rest.store ?? 'sqlite';
// `one`: the 5 targets are of one app, web (their runs go side by side, docs/design.md §18);
// `per-group`: group k's target is of its own app, web<k> (a peer for `one`: runs of different apps
// always went side by side).
const APPS = args.rest.apps ?? 'one';
const GROUPS = 5;
for (const [name, v] of [['--nodes', NODES], ['--late', LATE], ['--heartbeat-seconds', HB_S], ['--window-intervals', WINDOW_INTERVALS], ['--wake-rounds', WAKE_ROUNDS]] as const) {
  if (!(Number.isInteger(v) && v > 0)) throw new Error(`${name} takes a positive integer, not ${v}`);
}
if (STORE !== 'sqlite' && STORE !== 'postgres') throw new Error(`--store takes sqlite or postgres, not ${STORE}`);
if (APPS !== 'one' && APPS !== 'per-group') throw new Error(`--apps takes one or per-group, not ${APPS}`);
// The steady fleet runs 1.1.0; the late nodes come with 1.0.0; each wake round sets 1.2.<round>.
const STEADY = '1.1.0';
// How long a wake round waits for its nodes to hear: two heartbeats and some.
const HEAR_BOUND_MS = 2 * HB_S * 1000 + 3000;
const group = (i: number) => `g${i % GROUPS}`;
// The app of group g<k>'s target.
const appOf = (k: number) => (APPS === 'one' ? 'web' : `web${k}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Polls `check` every `everyMs` until it returns true; false when `ms` ran out.
async function until(ms: number, everyMs: number, check: () => Promise<boolean> | boolean): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await sleep(everyMs);
  }
}

// N nodes written straight into the store, each in group g<i mod 5>, reporting its app at STEADY.
// Their keys are never used: they never heartbeat, so their one heartbeat is dated 4 intervals
// ago: offline from the start, current while their target wants STEADY, and never in a run of a
// later version (a run would wait for their verdicts until its verdict timeout).
async function seedSteadyFleet(store: ControlStore): Promise<void> {
  for (let at = 0; at < NODES; at += 1000) {
    await store.write(async (tx) => {
      const now = (await tx.now()) - 4 * HB_S * 1000;
      for (let i = at; i < Math.min(NODES, at + 1000); i++) {
        const nodeId = `n-${String(i).padStart(9, '0')}`;
        await tx.nodes.insert({ nodeId, hostname: `host-${i}`, nodePublicKey: 'k', helperPublicKey: 'k', enrolledAt: now, labels: { group: group(i), env: 'prod' } });
        await tx.nodes.recordHeartbeat({ v: 1, nodeId, seq: 1, sentAt: now, bootId: 'b', agentVersion: '0.1.0', apps: [{ name: appOf(i % GROUPS), current: STEADY, previous: null, held: false, blocked: false, supervisor: { state: 'running', attempts: 0, since: now - 60_000 } }], receipts: [] }, now);
      }
    });
  }
}

// `target set g<k> --app <its app> --version V --select group=g<k> --canaries 0 --batch 100% --bake 0`,
// the operation the CLI and the admin API run.
function setTarget(ctx: OpContext, k: number, version: string): Promise<unknown> {
  return runOperation(ctx, targetSet, { name: `g${k}`, app: appOf(k), version, select: `group=g${k}`, canaries: '0', batch: '100%', bake: '0' });
}

interface LateNode {
  agent: ConvergingAgent;
  group: string;
  enrolledAt: number;
  convergedAt: number | null;
}

// LATE nodes enrolled through `server` (8 at a time), each started as an agent at once.
async function enrollLate(store: ControlStore, server: ControlServer): Promise<LateNode[]> {
  const out: LateNode[] = [];
  let next = 0;
  const worker = async () => {
    while (next < LATE) {
      const i = next++;
      const labels = { group: group(i), env: 'prod' };
      const control = { clock: { now: () => Date.now() }, server: { url: server.url }, token: async () => (await store.write((tx) => createToken(tx, 3_600_000, labels))).token };
      const fake = await new FakeNode(control, `late-${i}`).enroll();
      const enrolledAt = Date.now();
      const agent = await startConvergingAgent({ url: server.url, nodeId: fake.nodeId, nodeKey: fake.node.privateKey, helperPrivate: fake.helper.privateKey, helperPublic: fake.helper.publicKey, heartbeatSeconds: HB_S, app: appOf(i % GROUPS), current: '1.0.0' });
      out.push({ agent, group: labels.group, enrolledAt, convergedAt: null });
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return out;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-bench-targets-'));
  let cluster: PgCluster | null = null;
  let store: ControlStore | null = null;
  let server: ControlServer | null = null;
  let late: LateNode[] = [];
  try {
    let db = path.join(dir, 'control.db');
    if (STORE === 'postgres') {
      const missing = postgresMissing();
      if (missing) throw new Error(`--store postgres needs PostgreSQL: ${missing}`);
      cluster = await startPostgresCluster();
      db = await cluster.createDatabase();
      await migrateStore(db);
    } else {
      await migrateStore(db, { create: true });
    }
    store = await openStore(db);
    const artifactsDir = path.join(dir, 'artifacts');
    mkdirSync(artifactsDir, { recursive: true });
    await store.write((tx) => tx.settings.set('heartbeatSeconds', String(HB_S)));
    const key = generateKeyPair();
    const file = path.join(dir, 'web.tgz');
    writeFileSync(file, 'tarball of web');
    const apps = [...new Set(Array.from({ length: GROUPS }, (_, k) => appOf(k)))];
    for (const [app, version] of apps.flatMap((a) => [STEADY, ...Array.from({ length: WAKE_ROUNDS + 1 }, (_, r) => `1.2.${r}`)].map((v) => [a, v] as const))) {
      await addRelease(store, { app, version, file, url: null, baseUrl: 'http://127.0.0.1:1', privateKeyPem: key.privatePem, expiresDays: 30, artifactsDir });
    }
    let t = performance.now();
    await seedSteadyFleet(store);
    const seedS = (performance.now() - t) / 1000;
    const ctx: OpContext = { store, actor: { operator: 'bench', role: 'admin', source: null }, artifactsDir };
    for (let k = 0; k < GROUPS; k++) await setTarget(ctx, k, STEADY);
    note(args, `targets-fleet: ${NODES} steady nodes in ${GROUPS} groups seeded in ${seedS.toFixed(1)} s (${STORE}), ${GROUPS} targets set; ${LATE} late nodes, heartbeat ${HB_S} s${args.quick ? ' (--quick: a smaller fleet)' : ''}`);
    server = await startControlServer({ store, artifactsDir, host: '127.0.0.1', port: 0, heartbeatSeconds: HB_S, clock: systemClock });

    // 33 converge.
    const s = store;
    late = await enrollLate(s, server);
    const budgetMs = 20 * HB_S * 1000;
    const firstEnrolled = Math.min(...late.map((n) => n.enrolledAt));
    await until(budgetMs, 100, async () => {
      const rows = await s.read(async (tx) => Promise.all(late.map((n) => tx.nodes.get(n.agent.nodeId))));
      const now = Date.now();
      rows.forEach((r, i) => {
        const n = late[i]!;
        if (n.convergedAt === null && r?.apps.find((a) => a.name === appOf(Number(n.group.slice(1))))?.current === STEADY) n.convergedAt = now;
      });
      return late.every((n) => n.convergedAt !== null);
    });
    const converged = late.filter((n) => n.convergedAt !== null);
    const intervals = converged.map((n) => (n.convergedAt! - n.enrolledAt) / 1000 / HB_S);
    const lastS = converged.length ? (Math.max(...converged.map((n) => n.convergedAt!)) - firstEnrolled) / 1000 : NaN;
    printRow(args, {
      row: '33 converge',
      what: `${LATE} nodes enrolled after ${GROUPS} targets were set converge to their target's version, 0 operator actions (${NODES} steady nodes, ${APPS === 'one' ? 'targets of one app' : 'a target per app'}, ${STORE}, heartbeat ${HB_S} s)${converged.length < LATE ? ` (ONLY ${converged.length} within ${budgetMs / 1000} s)` : ''}`,
      unit: 'intervals',
      steward: series(intervals.length ? intervals : [NaN]),
      target: '<= 2 heartbeat intervals for every node',
      met: converged.length === LATE && Math.max(...intervals) <= 2,
      extra: { 'seconds, slowest node': Math.max(...converged.map((n) => (n.convergedAt! - n.enrolledAt) / 1000)), 'seconds, median node': median(converged.map((n) => (n.convergedAt! - n.enrolledAt) / 1000)), 'seconds from the first enrollment to the last converged': lastS, 'heartbeat seconds': HB_S, 'seeding s': seedS, 'median seconds by group': Object.fromEntries(Array.from({ length: GROUPS }, (_, k) => [`g${k}`, Number(median(converged.filter((n) => n.group === `g${k}`).map((n) => (n.convergedAt! - n.enrolledAt) / 1000).concat(converged.some((n) => n.group === `g${k}`) ? [] : [NaN])).toFixed(1))])) },
      notes: `from each node's enrollment answer until the control plane records it at the version; ${APPS === 'one' ? 'the 5 targets are of one app (web); their follow-up runs go side by side' : 'each target is of its own app (web0..web4), so their follow-up runs go side by side'}`,
    });

    // 33 status.
    const statusMs: number[] = [];
    const listMs: number[] = [];
    let bytes = 0;
    for (let r = 0; r < args.runs; r++) {
      for (let k = 0; k < GROUPS; k++) {
        t = performance.now();
        const v = JSON.stringify(await runOperation(ctx, targetStatus, { name: `g${k}` }));
        statusMs.push(performance.now() - t);
        bytes = Math.max(bytes, v.length);
      }
      t = performance.now();
      JSON.stringify(await runOperation(ctx, targetList, {}));
      listMs.push(performance.now() - t);
    }
    printRow(args, {
      row: '33 status',
      what: `target status of one of ${GROUPS} targets, each selecting ~${Math.round((NODES + LATE) / GROUPS)} of ${NODES + LATE} nodes (the operation and its JSON, ${STORE}, server running)`,
      unit: 'ms',
      steward: series(statusMs),
      target: 'under 1,000 ms (median)',
      met: median(statusMs) < 1000 && median(listMs) < 1000,
      extra: { 'target list ms (median)': median(listMs), 'target list ms (max)': Math.max(...listMs), 'status JSON bytes': bytes },
    });

    // 33 requests: a quiet window, nothing to converge, an interval after the last node converged
    // (--quick: at once; its window is there to keep the row working).
    if (!args.quick) await sleep(HB_S * 1000);
    for (const n of late) n.agent.resetCounts();
    t = performance.now();
    await sleep(WINDOW_INTERVALS * HB_S * 1000);
    const windowIntervals = (performance.now() - t) / 1000 / HB_S;
    const perNode = late.map((n) => (n.agent.posts + n.agent.gets) / windowIntervals);
    const hbPer = late.reduce((x, n) => x + n.agent.posts, 0) / late.length / windowIntervals;
    const waitPer = late.reduce((x, n) => x + n.agent.gets, 0) / late.length / windowIntervals;
    printRow(args, {
      row: '33 requests',
      what: `requests a quiet node sends per heartbeat interval: heartbeats and wake-up waits (${LATE} agents, ${windowIntervals.toFixed(1)} intervals of ${HB_S} s)`,
      unit: 'req/node/interval',
      steward: series(perNode),
      target: 'about 1 per node per interval ("about one request per heartbeat interval"); heartbeats and waits are both counted',
      met: median(perNode) <= 1.25,
      extra: { 'heartbeats/node/interval': hbPer, 'waits/node/interval': waitPer },
      notes: 'each node\'s heartbeat is held by the control plane for its interval (Steward-Hold, docs/protocol.md): the heartbeat is the long poll, on one kept connection',
    });

    // 33 wake: a new version for one group's target at a time, through the operation in this
    // process (as the admin API runs it, in serve's own process), then through the local CLI.
    const wanted = new Map(Array.from({ length: GROUPS }, (_, k) => [`g${k}`, STEADY]));
    const round = async (r: number, set: (k: number, version: string) => Promise<unknown>): Promise<{ hear: number[]; heard: number; byWake: number; setMs: number }> => {
      const k = r % GROUPS;
      const version = `1.2.${r}`;
      const members = late.filter((n) => n.group === `g${k}`);
      // The last round's nodes converged and no run in flight: the set starts its run at once. (The
      // steady nodes of a group set to a new version stay behind, offline: they never heartbeat.)
      const quiet = await until(10 * HB_S * 1000, 100, async () => late.every((n) => n.agent.current() === wanted.get(n.group)) && (await runOperation(ctx, targetList, {})).targets.every((x) => x.run === null || x.run.status !== 'running'));
      if (!quiet) {
        const behind = late.filter((n) => n.agent.current() !== wanted.get(n.group)).map((n) => `${n.agent.nodeId}:${n.agent.current()}`);
        const running = (await runOperation(ctx, targetList, {})).targets.filter((x) => x.run !== null && x.run.status === 'running').map((x) => `${x.name}:${x.run!.id}`);
        process.stderr.write(`targets-fleet: round ${r} starts unquiet after ${10 * HB_S} s: nodes behind ${behind.join(',') || 'none'}; runs running ${running.join(',') || 'none'}\n`);
      }
      // A quiet fleet: an interval after the last run ended (its nodes' waits armed again, the
      // ticks after it done), or two for a group woken in an earlier round (its wake count back to
      // 0). Set at once after a run ends, nodes heard in 2-3.5 s here (bench/README.md).
      // The first round follows the quiet window of `33 requests`.
      if (r > 0) await sleep((r >= GROUPS ? 2 : 1) * HB_S * 1000);
      const t0 = Date.now();
      await set(k, version);
      const setMs = Date.now() - t0;
      wanted.set(`g${k}`, version);
      await until(HEAR_BOUND_MS, 10, () => members.every((n) => n.agent.desired.some((d) => d.entry.version === version)));
      const out = { hear: [] as number[], heard: 0, byWake: 0, setMs };
      for (const n of members) {
        const d = n.agent.desired.find((x) => x.entry.version === version);
        // HEAR_BOUND_MS stands for a node that did not hear within it.
        if (!d) {
          out.hear.push(HEAR_BOUND_MS);
          continue;
        }
        out.heard++;
        out.hear.push(d.at - t0);
        if (n.agent.wokenAt.some((w) => w >= t0 && w <= d.at)) out.byWake++;
      }
      return out;
    };
    // How long the serving process's event loop was held (the ticks' reconcile, the set's own work):
    // a woken node's heartbeat waits behind it.
    const lag = monitorEventLoopDelay({ resolution: 10 });
    lag.enable();
    const inProcess = { hear: [] as number[], heard: 0, byWake: 0, setMs: [] as number[] };
    for (let r = 0; r < WAKE_ROUNDS; r++) {
      const o = await round(r, (k, version) => setTarget(ctx, k, version));
      inProcess.hear.push(...o.hear);
      inProcess.heard += o.heard;
      inProcess.byWake += o.byWake;
      inProcess.setMs.push(o.setMs);
    }
    printRow(args, {
      row: '33 wake',
      what: `target set of a new version (no canaries), run where serve runs it (the admin API's operation): from the call until each online node of its group has the entry in a heartbeat's answer (${WAKE_ROUNDS} round(s), ~${Math.round(LATE / GROUPS)} nodes each, ${NODES + LATE} nodes, ${STORE})`,
      unit: 'ms',
      steward: series(inProcess.hear),
      target: 'under 2,000 ms for every node',
      met: Math.max(...inProcess.hear) < 2000,
      extra: { 'nodes that heard': inProcess.heard, 'of them woken while held': inProcess.byWake, 'the target set call, ms (median)': median(inProcess.setMs), 'event loop delay of the serving process during the rounds, ms (p50, p99, max)': [lag.percentile(50), lag.percentile(99), lag.max].map((x) => Math.round(x / 1e6)), 'heartbeat seconds': HB_S },
      notes: `the call is the target set operation (checks, run start, first batch issued, in one transaction), in the process that serves the nodes (its SQLite work holds that process's event loop); a node whose heartbeat was not held at that moment hears at its next heartbeat; ${HEAR_BOUND_MS} ms stands for a node that did not hear within it`,
    });
    const viaCli = await round(WAKE_ROUNDS, (k, version) => controlCli(db, ['--artifacts', artifactsDir, 'target', 'set', `g${k}`, '--app', appOf(k), '--version', version, '--select', `group=g${k}`, '--canaries', '0', '--batch', '100%', '--bake', '0', '--json']).then((c) => {
      if (c.code !== 0) throw new Error(`steward-control target set exited ${c.code}: ${c.stderr}${c.stdout}`);
    }));
    printRow(args, {
      row: '33 wake cli',
      what: `the same through the local CLI, \`steward-control --db ... target set\`, a process of its own beside serve: from the command's start (${STORE})`,
      unit: 'ms',
      steward: series(viaCli.hear),
      target: 'under 2,000 ms for every node',
      met: Math.max(...viaCli.hear) < 2000,
      extra: { [`nodes that heard within ${HEAR_BOUND_MS} ms`]: viaCli.heard, 'of them woken while held': viaCli.byWake, 'the command, ms': viaCli.setMs },
      notes: STORE === 'sqlite'
        ? "on SQLite serve sees the CLI process's commit through PRAGMA data_version (looked at every 500 ms) and wakes every enrolled node, not knowing which ones changed"
        : "on PostgreSQL the CLI's commit NOTIFYs serve, which answers the held heartbeats of the nodes it names",
    });
  } finally {
    await Promise.all(late.map((n) => n.agent.stop()));
    await server?.close();
    await store?.close();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
// Why: the agents' kept connections and the store's handles are closed above; a stray timer of
// the ticker or a client must not keep the bench alive past its rows.
process.exit(0);

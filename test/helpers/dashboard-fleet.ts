// The demo fleet for the dashboard's browser tests and screenshots: the hosts of `npm run demo`
// (scripts/demo.ts: staging-1, prod-1..3 with web, prod-cache without it) as control-harness
// nodes that heartbeat and answer over HTTP, a control plane in-process with its admin listener
// on loopback, and the demo's history (web 1.0.0 to staging, then to prod; the broken 3.0.0
// halted by its staging canary). A viewer and an operator to log in with.
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { startAdminServer, type AdminServer } from '../../src/control/admin/admin-server.js';
import { createAdminRouter } from '../../src/control/admin/router.js';
import { operatorAdd } from '../../src/control/operations/operator-ops.js';
import type { Operation } from '../../src/control/operations/operation.js';
import { runOperation } from '../../src/control/operations/operations.js';
import { rolloutStart, rolloutStatus } from '../../src/control/operations/rollout-ops.js';
import type { Labels } from '../../src/core/labels.js';
import { systemClock } from '../../src/platform/clock.js';
import { FakeClock, FakeNode, startControlInProcess, type Control } from './control-harness.js';

// What a node answers for an attempt at `version` of `app`: a receipt, or nothing yet.
export type Answer = { outcome: 'active' } | { outcome: 'rolled-back' | 'failed' | 'refused'; reason: { code: string; message: string }; logFile?: string; logTail?: string } | null;

export interface DemoNode {
  name: string;
  fake: FakeNode;
  // Decides the node's answer to each attempt it is issued; default: confirm it.
  answer: (app: string, version: string) => Answer;
  // The trust report its heartbeats carry (heartbeat v8, docs/design.md §21.2); default: none, as an
  // older agent's.
  trust: Record<string, unknown> | null;
}

export interface DashboardFleet {
  control: Control;
  // The admin listener: the dashboard is adminUrl + '/ui/'.
  adminUrl: string;
  nodes: DemoNode[];
  byName(name: string): DemoNode;
  operatorToken: string;
  viewerToken: string;
  // Every node heartbeats once, and the first `maxAnswers` nodes with an attempt answer it (as
  // `answer` decides); then the rollouts advance.
  beat(maxAnswers?: number): Promise<void>;
  // Beats until the latest run of `app` ends; its status.
  settle(app: string): Promise<string>;
  // The latest run of `app` as `rollout status --json` shows it.
  status(app: string): Promise<any>;
  // Runs an operation as the local CLI would.
  run(op: Operation, input: Record<string, unknown>): Promise<any>;
  close(): Promise<void>;
}

const FLEET: Array<{ name: string; env: string; apps: Array<[string, string | null]> }> = [
  { name: 'staging-1', env: 'staging', apps: [['web', null]] },
  { name: 'prod-1', env: 'prod', apps: [['web', null]] },
  { name: 'prod-2', env: 'prod', apps: [['web', null]] },
  { name: 'prod-3', env: 'prod', apps: [['web', null]] },
  { name: 'prod-cache', env: 'prod', apps: [['cache', '1.2.0']] },
];

export const BROKEN = '3.0.0';

// The failed version's reason, as a helper's receipt says it (docs/design.md §4).
export function brokenAnswer(app: string, attempt: string): Answer {
  return {
    outcome: 'rolled-back',
    reason: { code: 'REPLACEMENT_UNHEALTHY', message: `${app} ${BROKEN} exited with code 1 during its probe; rolled back to 1.0.0\nError: listen EADDRINUSE: address already in use 127.0.0.1:8080` },
    logFile: `/var/log/steward/${app}-${attempt}.log`,
    // As a helper signs it for a control plane that takes receipt payload v2 (docs/design.md §12).
    logTail: `web ${BROKEN} listening on 127.0.0.1:8080\nnode:events:497\n      throw er; // Unhandled 'error' event\n      ^\nError: listen EADDRINUSE: address already in use 127.0.0.1:8080\n    at Server.setupListenHandle [as _listen2] (node:net:1872:16)\n`,
  };
}

// Starts the fleet with the demo's history; `extra` nodes join it (enrolled after the others).
export async function startDashboardFleet(o: { extra?: Array<{ hostname: string; labels?: Labels; apps: Array<[string, string | null]>; trust?: Record<string, unknown> }> } = {}): Promise<DashboardFleet> {
  // The store's clock follows the wall clock (moved on at each beat), so "3 s ago" is true.
  const clock = new FakeClock(Date.now());
  const control = await startControlInProcess({ clock, heartbeatSeconds: 1 });
  let admin: AdminServer | null = null;
  try {
    // The admin router waits after failed logins on the real clock.
    const router = createAdminRouter({ store: control.store, artifactsDir: artifactsDirOf(control.dbFile), clock: systemClock });
    admin = await startAdminServer({ router, host: '127.0.0.1', port: 0 });
    const opCtx = { store: control.store, actor: { operator: 'local:demo', role: 'admin' as const, source: null }, artifactsDir: artifactsDirOf(control.dbFile) };
    const run = (op: Operation, input: Record<string, unknown>): Promise<any> => runOperation(opCtx, op, input);
    for (const v of ['1.0.0', '2.0.0', BROKEN]) await control.addRelease('web', v);
    const nodes: DemoNode[] = [];
    for (const h of [...FLEET.map((f) => ({ hostname: f.name, labels: { env: f.env }, apps: f.apps, trust: undefined })), ...(o.extra ?? [])]) {
      const fake = await new FakeNode(control, h.hostname).enroll(await control.token(3_600_000, h.labels ?? {}));
      for (const [app, version] of h.apps) fake.setCurrent(app, version);
      nodes.push({ name: h.hostname, fake, answer: () => ({ outcome: 'active' }), trust: h.trust ?? null });
    }
    const beat = async (maxAnswers = Infinity) => {
      let answers = 0;
      clock.advance(Math.max(0, Date.now() - clock.now()));
      for (const n of nodes) {
        const first = await n.fake.heartbeat(n.trust ? { v: 8, trust: n.trust } : {});
        if (first.status !== 200) throw new Error(`${n.name}: heartbeat ${first.status} ${JSON.stringify(first.body)}`);
        const desired = (first.body.desired ?? []) as Array<{ app: string; version: string; attemptId: string }>;
        if (desired.length === 0 || answers >= maxAnswers) continue;
        answers++;
        const receipts = [];
        for (const d of desired) {
          const a = n.answer(d.app, d.version);
          if (!a) continue;
          const from = n.fake.apps.find((x) => x.name === d.app)?.current ?? null;
          receipts.push(n.fake.receipt({ app: d.app, attemptId: d.attemptId, fromVersion: from, targetVersion: d.version, outcome: a.outcome, ...(a.outcome === 'active' ? {} : { reason: a.reason, ...(a.logFile ? { logFile: a.logFile } : {}), ...(a.logTail !== undefined && a.outcome !== 'refused' ? { v: 2, logTail: a.logTail } : {}) }) }));
          if (a.outcome === 'active') n.fake.setCurrent(d.app, d.version);
        }
        if (receipts.length === 0) continue;
        const second = await n.fake.heartbeat({ receipts, ...(n.trust ? { v: 8, trust: n.trust } : {}) });
        if (second.status !== 200) throw new Error(`${n.name}: heartbeat ${second.status} ${JSON.stringify(second.body)}`);
      }
      await control.server.tick();
    };
    const status = async (app: string) => (await run(rolloutStatus, { app })).runs[0];
    const settle = async (app: string) => {
      for (let i = 0; i < 50; i++) {
        await beat();
        const s = await status(app);
        if (['succeeded', 'halted', 'stopped'].includes(s.status)) return s.status as string;
      }
      throw new Error(`the rollout of ${app} did not end: ${JSON.stringify(await status(app))}`);
    };
    const byName = (name: string) => {
      const n = nodes.find((x) => x.name === name);
      if (!n) throw new Error(`no node ${name}`);
      return n;
    };

    // The demo's history.
    await beat();
    await run(rolloutStart, { app: 'web', version: '1.0.0', select: 'env=staging', bake: '0', verdictTimeout: '60s' });
    if ((await settle('web')) !== 'succeeded') throw new Error('the staging rollout did not succeed');
    await run(rolloutStart, { app: 'web', version: '1.0.0', select: 'env=prod', canaries: '2', batch: '50%', maxFailures: '0', bake: '0', seed: '7', verdictTimeout: '60s' });
    if ((await settle('web')) !== 'succeeded') throw new Error('the prod rollout did not succeed');
    const staging = byName('staging-1');
    staging.answer = (app, version) => (version === BROKEN ? brokenAnswer(app, 'attempt') : { outcome: 'active' });
    await run(rolloutStart, { app: 'web', version: BROKEN, select: 'env=staging', bake: '0', verdictTimeout: '60s' });
    if ((await settle('web')) !== 'halted') throw new Error(`the rollout of ${BROKEN} did not halt`);

    const viewerToken = (await run(operatorAdd, { name: 'vera', role: 'viewer' })).token as string;
    const operatorToken = (await run(operatorAdd, { name: 'otto', role: 'operator' })).token as string;
    const adminServer = admin;
    return {
      control,
      adminUrl: admin.url,
      nodes,
      byName,
      operatorToken,
      viewerToken,
      beat,
      settle,
      status,
      run,
      close: async () => {
        await adminServer.close();
        await control.close();
      },
    };
  } catch (err) {
    await admin?.close();
    await control.close();
    throw err;
  }
}

// Starting, retrying and stopping rollout runs (DESIGN §9): the checks, the node snapshot, the
// first advance, all in one transaction.
import { retryNodes } from '../../core/rollout-planner.js';
import { StewardError } from '../../core/errors.js';
import type { ControlStore, NodeRow, RunRow, StoreTx } from '../store/store.js';
import { readHeartbeatSeconds } from '../store/settings.js';
import { advanceRun } from './advance-runs.js';
import { planRun } from './plan-run.js';

export interface RunOptions {
  canary?: string | null;
  batchSize?: number;
  verdictTimeoutMs?: number;
  allowRetryReverted?: boolean;
}

export const DEFAULT_VERDICT_TIMEOUT_MS = 30 * 60_000;

// Starts a run of `app` at `version` over every enrolled node; refuses a second running run of
// the app (BUSY), a release not in the catalog (NOT_FOUND) and a manifest that expires before the
// verdict timeout could pass (MANIFEST_EXPIRED).
export function startRun(store: ControlStore, app: string, version: string, opts: RunOptions): Promise<RunRow> {
  return store.write(async (tx) => {
    const nodes = await tx.nodes.list();
    if (opts.canary && !nodes.some((n) => n.nodeId === opts.canary)) {
      throw new StewardError('NOT_FOUND', `canary node ${opts.canary} is not enrolled`);
    }
    if (nodes.length === 0) throw new StewardError('NOT_FOUND', `no node is enrolled; a rollout of ${app} ${version} would have nobody to update`);
    return createRun(tx, app, version, opts, nodes);
  });
}

// Starts a new run over the nodes the app's last run did not confirm, with that run's settings
// unless `opts` overrides them.
export function retryRun(store: ControlStore, app: string, opts: RunOptions): Promise<RunRow> {
  return store.write(async (tx) => {
    const last = await tx.runs.latest(app);
    if (!last) throw new StewardError('NOT_FOUND', `no rollout of ${app} to retry`);
    if (last.status === 'running') throw new StewardError('BUSY', `rollout ${last.id} of ${app} ${last.version} is still running; stop it first`);
    const ids = new Set(retryNodes(await planRun(tx, last, await tx.now())));
    const nodes = (await tx.nodes.list()).filter((n) => ids.has(n.nodeId));
    if (nodes.length === 0) throw new StewardError('NOT_FOUND', `every node of rollout ${last.id} of ${app} ${last.version} confirmed; nothing to retry`);
    const merged: RunOptions = {
      canary: opts.canary ?? null,
      batchSize: opts.batchSize ?? (Number(last.batch) || 1),
      verdictTimeoutMs: opts.verdictTimeoutMs ?? last.verdictTimeoutMs,
      allowRetryReverted: opts.allowRetryReverted ?? last.allowRetryReverted,
    };
    return createRun(tx, app, last.version, merged, nodes);
  });
}

// Stops the running run of `app` (its issued attempts stay; nothing new is sent) and ends it.
export function stopRun(store: ControlStore, app: string): Promise<RunRow> {
  return store.write(async (tx) => {
    const run = await tx.runs.active(app);
    if (!run) throw new StewardError('NOT_FOUND', `no rollout of ${app} is running`);
    await tx.runs.setStopped(run.id);
    await advanceRun(tx, run.id);
    return (await tx.runs.get(run.id)) as RunRow;
  });
}

async function createRun(tx: StoreTx, app: string, version: string, opts: RunOptions, nodes: NodeRow[]): Promise<RunRow> {
  const now = await tx.now();
  const running = await tx.runs.active(app);
  if (running) throw new StewardError('BUSY', `rollout ${running.id} of ${app} ${running.version} is running; one run per app (stop it first)`);
  const release = await tx.releases.get(app, version);
  if (!release) throw new StewardError('NOT_FOUND', `${app} ${version} is not in the catalog (\`steward-control release add\`)`);
  const verdictTimeoutMs = opts.verdictTimeoutMs ?? DEFAULT_VERDICT_TIMEOUT_MS;
  if (release.expires <= now + verdictTimeoutMs) {
    const when = new Date(release.expires).toISOString();
    throw new StewardError('MANIFEST_EXPIRED', `the manifest of ${app} ${version} expires at ${when}, within the verdict timeout; re-run \`release add\` to sign a fresh one`);
  }
  const id = await tx.runs.insert(
    {
      app,
      version,
      startedAt: now,
      heartbeatIntervalMs: (await readHeartbeatSeconds(tx)) * 1000,
      selector: '',
      canaries: 1,
      namedCanaries: opts.canary ? [opts.canary] : [],
      canarySeed: 0,
      batch: String(Math.max(1, Math.floor(opts.batchSize ?? 1))),
      bakeMs: 0,
      maxFailures: 0,
      maxRefused: '100%',
      failuresCarried: 0,
      verdictTimeoutMs,
      allowRetryReverted: opts.allowRetryReverted ?? false,
      windows: [],
      tz: 'UTC',
      startAt: null,
      behind: false,
      retryOf: null,
    },
    nodes.map((n) => ({ nodeId: n.nodeId, lastHeartbeatAt: n.lastHeartbeatAt, listedApp: true })),
  );
  await advanceRun(tx, id);
  return (await tx.runs.get(id)) as RunRow;
}

// Starting, retrying and stopping rollout runs (DESIGN §9): the checks, the node snapshot, the
// first advance, all in one transaction.
import { retryNodes } from '../../core/rollout-planner.js';
import { StewardError } from '../../core/errors.js';
import type { ControlStore } from '../store/open-store.js';
import { listNodes } from '../store/nodes.js';
import { readRelease } from '../store/releases.js';
import { insertRun, latestRun, markStopped, readRun, runningRun, type RunRow } from '../store/runs.js';
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
export function startRun(store: ControlStore, app: string, version: string, opts: RunOptions, now: number): RunRow {
  return store.write(() => {
    const nodes = listNodes(store);
    if (opts.canary && !nodes.some((n) => n.nodeId === opts.canary)) {
      throw new StewardError('NOT_FOUND', `canary node ${opts.canary} is not enrolled`);
    }
    if (nodes.length === 0) throw new StewardError('NOT_FOUND', `no node is enrolled; a rollout of ${app} ${version} would have nobody to update`);
    return createRun(store, app, version, opts, nodes.map((n) => ({ nodeId: n.nodeId, lastHeartbeatAt: n.lastHeartbeatAt })), now);
  });
}

// Starts a new run over the nodes the app's last run did not confirm, with that run's settings
// unless `opts` overrides them.
export function retryRun(store: ControlStore, app: string, opts: RunOptions, now: number): RunRow {
  return store.write(() => {
    const last = latestRun(store, app);
    if (!last) throw new StewardError('NOT_FOUND', `no rollout of ${app} to retry`);
    if (last.status === 'running') throw new StewardError('BUSY', `rollout ${last.id} of ${app} ${last.version} is still running; stop it first`);
    const ids = new Set(retryNodes(planRun(store, last, now)));
    const nodes = listNodes(store).filter((n) => ids.has(n.nodeId));
    if (nodes.length === 0) throw new StewardError('NOT_FOUND', `every node of rollout ${last.id} of ${app} ${last.version} confirmed; nothing to retry`);
    const merged: RunOptions = {
      canary: opts.canary ?? null,
      batchSize: opts.batchSize ?? last.batchSize,
      verdictTimeoutMs: opts.verdictTimeoutMs ?? last.verdictTimeoutMs,
      allowRetryReverted: opts.allowRetryReverted ?? last.allowRetryReverted === 1,
    };
    return createRun(store, app, last.version, merged, nodes.map((n) => ({ nodeId: n.nodeId, lastHeartbeatAt: n.lastHeartbeatAt })), now);
  });
}

// Stops the running run of `app` (its issued attempts stay; nothing new is sent) and ends it.
export function stopRun(store: ControlStore, app: string, now: number): RunRow {
  return store.write(() => {
    const run = runningRun(store, app);
    if (!run) throw new StewardError('NOT_FOUND', `no rollout of ${app} is running`);
    markStopped(store, run.id);
    advanceRun(store, run.id, now);
    return readRun(store, run.id) as RunRow;
  });
}

function createRun(store: ControlStore, app: string, version: string, opts: RunOptions, nodes: Array<{ nodeId: string; lastHeartbeatAt: number | null }>, now: number): RunRow {
  const running = runningRun(store, app);
  if (running) throw new StewardError('BUSY', `rollout ${running.id} of ${app} ${running.version} is running; one run per app (stop it first)`);
  const release = readRelease(store, app, version);
  if (!release) throw new StewardError('NOT_FOUND', `${app} ${version} is not in the catalog (\`steward-control release add\`)`);
  const verdictTimeoutMs = opts.verdictTimeoutMs ?? DEFAULT_VERDICT_TIMEOUT_MS;
  if (release.expires <= now + verdictTimeoutMs) {
    const when = new Date(release.expires).toISOString();
    throw new StewardError('MANIFEST_EXPIRED', `the manifest of ${app} ${version} expires at ${when}, within the verdict timeout; re-run \`release add\` to sign a fresh one`);
  }
  const id = insertRun(
    store,
    {
      app,
      version,
      startedAt: now,
      canary: opts.canary ?? null,
      batchSize: Math.max(1, Math.floor(opts.batchSize ?? 1)),
      verdictTimeoutMs,
      allowRetryReverted: opts.allowRetryReverted ?? false,
      heartbeatIntervalMs: readHeartbeatSeconds(store) * 1000,
    },
    nodes,
  );
  advanceRun(store, id, now);
  return readRun(store, id) as RunRow;
}

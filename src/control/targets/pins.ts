// Node pins (docs/design.md §18): `nodes pin NODE APP=VERSION --reason R [--until DURATION]` holds a
// node at a version whatever a target wants (a host's own hold > a pin > a target). The control
// plane carries a pin to its node through a run of its own (kind `pin`: no canaries, one batch,
// no bake), lifts a pin past its `until` itself, and audits that as the system's act.
import { ANALYSIS_OFF } from '../../core/run-analysis.js';
import { StewardError } from '../../core/errors.js';
import { heartbeatFresh } from '../../core/heartbeat-freshness.js';
import { logger } from '../../platform/log.js';
import { recordAudit } from '../audit/record-audit.js';
import { DEFAULT_VERDICT_TIMEOUT_MS, newCanarySeed } from '../rollouts/run-options.js';
import { startOwnedRun } from '../rollouts/start-run.js';
import { readHeartbeatSeconds } from '../store/settings.js';
import type { ControlStore, PinRow, RunPolicy, StoreTx } from '../store/store.js';

const log = logger('control:pins');

// Who the audit log names for what the control plane does by itself.
export const SYSTEM_ACTOR = { operator: 'system:steward-control', source: null } as const;

export const MAX_PIN_REASON = 1024;

export interface PinRequest {
  nodeId: string;
  app: string;
  version: string;
  reason: string;
  // How long it holds from now, or null: until unpinned.
  forMs: number | null;
  by: string | null;
}

// Pins a node, in the caller's transaction; refuses a node not enrolled, and an app or version
// not in the catalog (NOT_FOUND), and an empty or long reason (USAGE).
export async function pinNode(tx: StoreTx, r: PinRequest): Promise<PinRow> {
  const reason = r.reason.trim();
  if (reason.length === 0) throw new StewardError('USAGE', 'nodes pin: --reason must say why (it is shown with every node it holds back)');
  if (reason.length > MAX_PIN_REASON) throw new StewardError('USAGE', `nodes pin: --reason is longer than ${MAX_PIN_REASON} characters`);
  if (!(await tx.nodes.get(r.nodeId))) throw new StewardError('NOT_FOUND', `node ${r.nodeId} is not enrolled`);
  const releases = await tx.releases.list(r.app);
  if (releases.length === 0) throw new StewardError('NOT_FOUND', `no release of ${r.app} is in the catalog; a pin names a catalog version (\`steward-control release list\`)`);
  if (!releases.some((x) => x.version === r.version)) {
    throw new StewardError('NOT_FOUND', `${r.app} ${r.version} is not in the catalog (it has ${releases.map((x) => x.version).slice(-5).join(', ')}); a pin names a catalog version`);
  }
  const now = await tx.now();
  const pin: PinRow = { nodeId: r.nodeId, app: r.app, version: r.version, by: r.by, reason, at: now, until: r.forMs === null ? null : now + r.forMs, runId: null };
  await tx.pins.put(pin);
  return pin;
}

// Lifts every pin whose `until` has passed, each audited as the system's act; how many.
export async function liftExpiredPins(store: ControlStore): Promise<number> {
  // Read first: most rounds lift nothing, and write nothing.
  const due = await store.read(async (tx) => {
    const now = await tx.now();
    return (await tx.pins.list()).some((p) => p.until !== null && p.until <= now);
  });
  if (!due) return 0;
  return store.write(async (tx) => {
    const now = await tx.now();
    let lifted = 0;
    for (const p of await tx.pins.list()) {
      if (p.until === null || p.until > now) continue;
      if (!(await tx.pins.remove(p.nodeId, p.app))) continue;
      await recordAudit(tx, SYSTEM_ACTOR, 'nodes.unpin', p.nodeId, { app: p.app, version: p.version, reason: 'expired', until: p.until, pinnedBy: p.by, pinReason: p.reason });
      log('lifted the expired pin of node=%s app=%s version=%s (until %s)', p.nodeId, p.app, p.version, new Date(p.until).toISOString());
      lifted++;
    }
    return lifted;
  });
}

// The policy of a pin run: every pinned node at once, judged as a run's nodes are (its verdict
// timeout), nothing held back by canaries, bake, windows or analysis; a pin is an operator's explicit word.
export function pinRunPolicy(): RunPolicy {
  return {
    analysis: ANALYSIS_OFF,
    selector: '',
    canaries: 0,
    namedCanaries: [],
    canarySeed: newCanarySeed(),
    batch: '100%',
    bakeMs: 0,
    maxFailures: 1_000_000,
    maxRefused: '100%',
    // As its failures: each pinned node's own trouble, never a halt of the others.
    maxFetchFailures: '100%',
    verdictTimeoutMs: DEFAULT_VERDICT_TIMEOUT_MS,
    allowRetryReverted: true,
    windows: [],
    tz: 'UTC',
    startAt: null,
    failuresCarried: 0,
    behind: false,
    retryOf: null,
  };
}

// Starts, for each app with no run going, a pin run of one pinned version over the pinned nodes
// that do not run it, report the app, are heard from and not held by their host, and that no
// pin run carried yet; how many runs it started.
export async function carryPins(store: ControlStore): Promise<number> {
  const apps = await store.read(async (tx) => [...new Set((await tx.pins.list()).filter((p) => p.runId === null).map((p) => p.app))]);
  let started = 0;
  for (const app of apps) {
    try {
      started += await store.write(async (tx) => {
        if (await tx.runs.active(app)) return 0;
        const now = await tx.now();
        const intervalMs = (await readHeartbeatSeconds(tx)) * 1000;
        const waiting: Array<{ pin: PinRow; node: NonNullable<Awaited<ReturnType<typeof tx.nodes.get>>> }> = [];
        for (const pin of await tx.pins.list()) {
          if (pin.app !== app || pin.runId !== null || (pin.until !== null && pin.until <= now)) continue;
          const node = await tx.nodes.get(pin.nodeId);
          const report = node?.apps.find((a) => a.name === app);
          if (!node || !report || report.held || report.current === pin.version || !heartbeatFresh(node.lastHeartbeatAt, now, intervalMs)) continue;
          waiting.push({ pin, node });
        }
        const version = waiting[0]?.pin.version;
        if (version === undefined) return 0;
        const these = waiting.filter((w) => w.pin.version === version);
        const run = await startOwnedRun(tx, app, version, these.map((w) => w.node), pinRunPolicy(), { kind: 'pin', target: null });
        if (!run) return 0;
        for (const w of these) await tx.pins.setRun(w.pin.nodeId, app, run.id);
        log('started pin run=%d of %s %s over %d node(s)', run.id, app, version, these.length);
        return 1;
      });
    } catch (err) {
      log('pin run of app=%s failed to start: %s', app, (err as Error)?.message ?? String(err));
    }
  }
  return started;
}

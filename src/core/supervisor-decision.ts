// The supervisor's restart decisions (docs/design.md §5), pure: a persisted record, one observation and
// the clock go in; a decision and the record to persist come out. No I/O, no Date.now.

export interface RestartPolicy {
  baseMs: number;
  capMs: number;
  maxAttempts: number;
  healthyMs: number;
}

// What the supervisor persists per app. JSON-able; every time is epoch ms.
export interface SupervisorRecordState {
  // running: a process should be up. waiting: it exited and a respawn is due at nextAttemptAt.
  // error: the budget is spent; only a manual start leaves it. stopped: stopped on purpose.
  state: 'running' | 'waiting' | 'error' | 'stopped';
  // Respawns spent from the budget since the last refill or manual start.
  attempts: number;
  lastStartAt: number | null;
  lastExitAt: number | null;
  nextAttemptAt: number | null;
  lastExit: { code: number | null; signal: string | null } | null;
  giveUpReason: string | null;
}

// The caller reports a `started` for every spawn it makes, a respawn included, and an `exited`
// for every unexpected exit; a spawn that fails at once is a `started` then an `exited`.
export type Observation =
  // The app's process exited and nobody asked it to.
  | { kind: 'exited'; at: number; code: number | null; signal: string | null }
  // A pass found the process alive, or a sweep with nothing else to report.
  | { kind: 'tick'; at: number }
  // A process was started. `respawn` spends one attempt; other starts (first pass after a boot
  // or a helper restart, an update's start) spend nothing and refill nothing.
  | { kind: 'started'; at: number; respawn: boolean }
  // agentctl start|restart started the process: a fresh budget, even from `error`.
  | { kind: 'manual-start'; at: number }
  // The process was stopped on purpose (agentctl stop, an update's stop): no respawn.
  | { kind: 'stopped'; at: number };

export type Decision =
  | { action: 'respawn-now' }
  | { action: 'wait-until'; at: number }
  | { action: 'give-up'; reason: string }
  // The process stayed up healthyMs: attempts went back to 0.
  | { action: 'refill' }
  | { action: 'none' };

export interface SupervisorDecision {
  decision: Decision;
  next: SupervisorRecordState;
}

// The record of an app the supervisor has never started.
export function initialSupervisorState(): SupervisorRecordState {
  return { state: 'stopped', attempts: 0, lastStartAt: null, lastExitAt: null, nextAttemptAt: null, lastExit: null, giveUpReason: null };
}

// How long to wait before the next respawn after `failed` respawned processes died early:
// at once for the first, then min(baseMs * 2^failed, capMs).
export function respawnDelay(failed: number, policy: RestartPolicy): number {
  if (failed <= 0) return 0;
  // 2^40 * baseMs is past any capMs the config accepts; the bound keeps the product finite.
  return Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(failed, 40));
}

// The supervisor's answer to one observation: respawn now, wait, give up, refill or nothing.
export function decide(record: SupervisorRecordState, obs: Observation, policy: RestartPolicy, now: number): SupervisorDecision {
  const rec = clampToNow(record, policy, now);
  // An event stamped after `now` happened no later than now (the clock went back).
  const at = Math.min(obs.at, now);
  switch (obs.kind) {
    case 'started':
      return none({
        ...rec,
        state: 'running',
        attempts: obs.respawn ? rec.attempts + 1 : rec.attempts,
        lastStartAt: at,
        nextAttemptAt: null,
        giveUpReason: null,
      });
    case 'manual-start':
      return none({ ...rec, state: 'running', attempts: 0, lastStartAt: at, nextAttemptAt: null, giveUpReason: null });
    case 'stopped':
      return none({ ...rec, state: 'stopped', nextAttemptAt: null });
    case 'tick':
      return onTick(rec, policy, now);
    case 'exited':
      return onExit(rec, { code: obs.code, signal: obs.signal }, at, policy, now);
  }
}

function onTick(rec: SupervisorRecordState, policy: RestartPolicy, now: number): SupervisorDecision {
  if (rec.state === 'waiting') return dueOrWait(rec, now);
  if (rec.state === 'running' && rec.attempts > 0 && rec.lastStartAt !== null && now - rec.lastStartAt >= policy.healthyMs) {
    return { decision: { action: 'refill' }, next: { ...rec, attempts: 0 } };
  }
  return none(rec);
}

function onExit(
  rec: SupervisorRecordState,
  exit: { code: number | null; signal: string | null },
  at: number,
  policy: RestartPolicy,
  now: number,
): SupervisorDecision {
  // No process was meant to be up: a stale or expected exit changes nothing, and an `error`
  // app is never respawned.
  if (rec.state === 'waiting') return dueOrWait(rec, now);
  if (rec.state !== 'running') return none(rec);

  const startedAt = rec.lastStartAt === null ? at : Math.min(rec.lastStartAt, at);
  const uptime = at - startedAt;
  // A process that stayed up healthyMs refilled the budget, even if no tick saw it.
  const failed = uptime >= policy.healthyMs ? 0 : rec.attempts;
  const exited = { ...rec, attempts: failed, lastExitAt: at, lastExit: exit };

  if (failed >= policy.maxAttempts) {
    const reason =
      `gave up after ${failed} respawns: the last process ${describeExit(exit)} after ${uptime} ms, ` +
      `before healthyMs ${policy.healthyMs}`;
    return {
      decision: { action: 'give-up', reason },
      next: { ...exited, state: 'error', nextAttemptAt: null, giveUpReason: reason },
    };
  }
  return dueOrWait({ ...exited, state: 'waiting', nextAttemptAt: at + respawnDelay(failed, policy) }, now);
}

// A waiting record: respawn once nextAttemptAt has come, else wait for it. The record stays
// `waiting` until the respawn's `started`, so a respawn lost to a crash is made by a later pass.
function dueOrWait(rec: SupervisorRecordState, now: number): SupervisorDecision {
  const due = rec.nextAttemptAt ?? now;
  if (due <= now) return { decision: { action: 'respawn-now' }, next: { ...rec, nextAttemptAt: due } };
  return { decision: { action: 'wait-until', at: due }, next: rec };
}

// A persisted time in the future counts as now (the clock went back): a start or exit is moved
// back to now, so uptime restarts from now and nothing refills early; a respawn is never further
// away than the longest wait the current attempts can give, so nothing waits forever.
function clampToNow(rec: SupervisorRecordState, policy: RestartPolicy, now: number): SupervisorRecordState {
  const latestAttempt = now + respawnDelay(rec.attempts, policy);
  return {
    ...rec,
    lastStartAt: rec.lastStartAt === null ? null : Math.min(rec.lastStartAt, now),
    lastExitAt: rec.lastExitAt === null ? null : Math.min(rec.lastExitAt, now),
    nextAttemptAt: rec.nextAttemptAt === null ? null : Math.min(rec.nextAttemptAt, latestAttempt),
  };
}

function describeExit(exit: { code: number | null; signal: string | null }): string {
  if (exit.signal !== null) return `was killed by ${exit.signal}`;
  if (exit.code !== null) return `exited with code ${exit.code}`;
  return 'exited';
}

function none(next: SupervisorRecordState): SupervisorDecision {
  return { decision: { action: 'none' }, next };
}

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decide,
  initialSupervisorState,
  type Decision,
  type Observation,
  type RestartPolicy,
  type SupervisorRecordState,
} from '../../src/core/supervisor-decision.js';

// docs/design.md §2 defaults. Every time below is ms on a fake clock that starts at T0.
const defaults: RestartPolicy = { baseMs: 5_000, capMs: 300_000, maxAttempts: 5, healthyMs: 600_000 };
const T0 = 1_700_000_000_000;
const s = 1_000;
const min = 60 * s;

// One step: an observation, decided at `now` (the observation's own time unless given).
interface Step {
  obs: Observation;
  now?: number;
}
const exit = (at: number, code: number | null = 1, signal: string | null = null): Step => ({ obs: { kind: 'exited', at, code, signal } });
const tick = (at: number, now = at): Step => ({ obs: { kind: 'tick', at }, now });
const respawned = (at: number): Step => ({ obs: { kind: 'started', at, respawn: true } });
const started = (at: number): Step => ({ obs: { kind: 'started', at, respawn: false } });
const manualStart = (at: number): Step => ({ obs: { kind: 'manual-start', at } });
const stopped = (at: number): Step => ({ obs: { kind: 'stopped', at } });

const NONE: Decision = { action: 'none' };
const NOW: Decision = { action: 'respawn-now' };
const REFILL: Decision = { action: 'refill' };
const until = (at: number): Decision => ({ action: 'wait-until', at });
const GIVE_UP = 'give-up';

// Feeds the steps in order, each to the record the previous one left.
function runSteps(policy: RestartPolicy, from: SupervisorRecordState, steps: Step[]): { decisions: Decision[]; last: SupervisorRecordState } {
  let record = from;
  const decisions: Decision[] = [];
  for (const step of steps) {
    const { decision, next } = decide(record, step.obs, policy, step.now ?? step.obs.at);
    decisions.push(decision);
    record = next;
  }
  return { decisions, last: record };
}

// ---- Table 1: crash loops. The app starts (not a respawn) at T0; each process lives for the
// next uptime, then exits; the supervisor's decisions are followed on the fake clock (a tick just
// before a wait ends must still wait). Each row is the delays between an exit and the respawn it
// led to, and how the loop ended.
interface CrashLoopCase {
  name: string;
  policy: RestartPolicy;
  uptimes: number[];
  respawnDelays: number[];
  end: 'error' | 'waiting' | 'running';
  reason?: RegExp;
}

function runCrashLoop(policy: RestartPolicy, uptimes: number[]): { delays: number[]; last: SupervisorRecordState; reason: string | null } {
  let record = decide(initialSupervisorState(), { kind: 'started', at: T0, respawn: false }, policy, T0).next;
  let t = T0;
  const delays: number[] = [];
  let reason: string | null = null;
  for (const uptime of uptimes) {
    t += uptime;
    const exitAt = t;
    let out = decide(record, { kind: 'exited', at: exitAt, code: 1, signal: null }, policy, t);
    record = out.next;
    if (out.decision.action === 'give-up') {
      reason = out.decision.reason;
      break;
    }
    if (out.decision.action === 'wait-until') {
      const dueAt = out.decision.at;
      const early = decide(record, { kind: 'tick', at: dueAt - 1 }, policy, dueAt - 1);
      assert.deepEqual(early.decision, until(dueAt), 'a tick 1 ms before the wait ends still waits');
      t = dueAt;
      out = decide(early.next, { kind: 'tick', at: t }, policy, t);
      record = out.next;
    }
    assert.deepEqual(out.decision, NOW);
    delays.push(t - exitAt);
    record = decide(record, { kind: 'started', at: t, respawn: true }, policy, t).next;
  }
  return { delays, last: record, reason };
}

const crashLoops: CrashLoopCase[] = [
  {
    name: 'a crash loop with the default policy respawns at +0, +10 s, +20 s, +40 s, +80 s, then gives up when the 5th respawn dies early',
    policy: defaults,
    uptimes: [3 * s, 3 * s, 3 * s, 3 * s, 3 * s, 3 * s],
    respawnDelays: [0, 10 * s, 20 * s, 40 * s, 80 * s],
    end: 'error',
    reason: /^gave up after 5 respawns: the last process exited with code 1 after 3000 ms, before healthyMs 600000$/,
  },
  {
    name: 'every spawn dying at once ends in error after 5 respawns',
    policy: defaults,
    uptimes: [0, 0, 0, 0, 0, 0, 0, 0],
    respawnDelays: [0, 10 * s, 20 * s, 40 * s, 80 * s],
    end: 'error',
    reason: /after 5 respawns: .* after 0 ms/,
  },
  {
    name: 'the 5th respawned process dying 1 ms short of healthyMs still ends in error',
    policy: defaults,
    uptimes: [3 * s, 3 * s, 3 * s, 3 * s, 3 * s, 10 * min - 1],
    respawnDelays: [0, 10 * s, 20 * s, 40 * s, 80 * s],
    end: 'error',
    reason: /after 5 respawns: .* after 599999 ms/,
  },
  {
    name: 'with maxAttempts 20 the waits double until capMs and then stay at 300 s',
    policy: { ...defaults, maxAttempts: 20 },
    uptimes: Array.from({ length: 21 }, () => 1 * s),
    respawnDelays: [0, 10 * s, 20 * s, 40 * s, 80 * s, 160 * s, ...Array.from({ length: 14 }, () => 300 * s)],
    end: 'error',
    reason: /^gave up after 20 respawns/,
  },
  {
    name: 'a process up healthyMs refills the budget, so its crash is respawned at +0 again',
    policy: defaults,
    uptimes: [3 * s, 3 * s, 3 * s, 10 * min, 3 * s, 3 * s],
    respawnDelays: [0, 10 * s, 20 * s, 0, 10 * s, 20 * s],
    end: 'running',
  },
  {
    name: 'a process up 1 ms short of healthyMs refills nothing',
    policy: defaults,
    uptimes: [3 * s, 3 * s, 3 * s, 10 * min - 1],
    respawnDelays: [0, 10 * s, 20 * s, 40 * s],
    end: 'running',
  },
  {
    name: 'with maxAttempts 1 the first respawn is at once and its early death is an error',
    policy: { ...defaults, maxAttempts: 1 },
    uptimes: [3 * s, 3 * s],
    respawnDelays: [0],
    end: 'error',
    reason: /^gave up after 1 respawns/,
  },
];

for (const c of crashLoops) {
  test(c.name, () => {
    const { delays, last, reason } = runCrashLoop(c.policy, c.uptimes);
    assert.deepEqual(delays, c.respawnDelays);
    assert.equal(last.state, c.end);
    if (c.reason) {
      assert.match(reason ?? '', c.reason);
      assert.equal(last.giveUpReason, reason);
      assert.deepEqual(last.lastExit, { code: 1, signal: null });
    } else {
      assert.equal(reason, null);
    }
  });
}

// ---- Table 2: event sequences. Each row starts from a record, feeds the steps and expects one
// decision per step, then checks some fields of the final record.
interface EventCase {
  name: string;
  policy?: Partial<RestartPolicy>;
  from?: Partial<SupervisorRecordState>;
  steps: Step[];
  decisions: Array<Decision | typeof GIVE_UP>;
  final?: Partial<SupervisorRecordState>;
}

const running = (attempts: number, lastStartAt: number): Partial<SupervisorRecordState> => ({ state: 'running', attempts, lastStartAt });
const waiting = (attempts: number, nextAttemptAt: number): Partial<SupervisorRecordState> => ({
  state: 'waiting',
  attempts,
  lastStartAt: T0,
  lastExitAt: T0 + s,
  nextAttemptAt,
});
const errored: Partial<SupervisorRecordState> = { state: 'error', attempts: 5, lastStartAt: T0, giveUpReason: 'gave up after 5 respawns' };

const eventCases: EventCase[] = [
  {
    name: 'a first exit is respawned at once',
    from: running(0, T0),
    steps: [exit(T0 + 3 * s), respawned(T0 + 3 * s)],
    decisions: [NOW, NONE],
    final: { state: 'running', attempts: 1, lastStartAt: T0 + 3 * s, nextAttemptAt: null, lastExitAt: T0 + 3 * s },
  },
  {
    name: 'while waiting, a tick before nextAttemptAt waits until the same time and one at or after it respawns',
    from: waiting(2, T0 + 21 * s),
    steps: [tick(T0 + 2 * s), tick(T0 + 21 * s - 1), tick(T0 + 21 * s)],
    decisions: [until(T0 + 21 * s), until(T0 + 21 * s), NOW],
    final: { state: 'waiting', attempts: 2, nextAttemptAt: T0 + 21 * s },
  },
  {
    name: 'a pass that comes late after a wait respawns at once',
    from: waiting(2, T0 + 21 * s),
    steps: [tick(T0 + 5 * min)],
    decisions: [NOW],
  },
  {
    name: 'a pass delayed past an exit whose wait has already ended respawns at once',
    from: running(1, T0),
    steps: [{ obs: { kind: 'exited', at: T0 + s, code: 1, signal: null }, now: T0 + 11 * s }],
    decisions: [NOW],
    final: { state: 'waiting', nextAttemptAt: T0 + 11 * s, lastExitAt: T0 + s },
  },
  {
    name: 'a respawn lost before its start is still due at the next pass',
    from: running(1, T0),
    steps: [exit(T0 + s), tick(T0 + 11 * s), tick(T0 + 71 * s), respawned(T0 + 71 * s)],
    decisions: [until(T0 + 11 * s), NOW, NOW, NONE],
    final: { state: 'running', attempts: 2 },
  },
  {
    name: 'a tick on a process up healthyMs refills the budget and a later crash respawns at +0',
    from: running(4, T0),
    steps: [tick(T0 + 10 * min - 1), tick(T0 + 10 * min), tick(T0 + 11 * min), exit(T0 + 12 * min)],
    decisions: [NONE, REFILL, NONE, NOW],
    final: { state: 'waiting', attempts: 0 },
  },
  {
    name: 'a process up healthyMs that exits without a tick in between is respawned at +0',
    from: running(5, T0),
    steps: [exit(T0 + 10 * min)],
    decisions: [NOW],
    final: { state: 'waiting', attempts: 0 },
  },
  {
    name: 'a tick on a process up just under healthyMs refills nothing',
    from: running(3, T0),
    steps: [tick(T0 + 10 * min - 1), exit(T0 + 10 * min - 1)],
    decisions: [NONE, until(T0 + 10 * min - 1 + 40 * s)],
    final: { attempts: 3 },
  },
  {
    name: 'a start after a reboot, a helper restart or an update spends no budget and refills none',
    from: waiting(3, T0 + 41 * s),
    steps: [started(T0 + 2 * min), exit(T0 + 2 * min + s)],
    decisions: [NONE, until(T0 + 2 * min + s + 40 * s)],
    final: { state: 'waiting', attempts: 3 },
  },
  {
    name: 'a start that is not a respawn leaves the 5th-respawn budget spent, so its early death is an error',
    from: running(5, T0),
    steps: [started(T0 + min), exit(T0 + min + s)],
    decisions: [NONE, GIVE_UP],
    final: { state: 'error', attempts: 5 },
  },
  {
    name: 'an error app is never respawned by exits or ticks',
    from: errored,
    steps: [tick(T0 + min), exit(T0 + 2 * min), tick(T0 + 24 * 60 * min)],
    decisions: [NONE, NONE, NONE],
    final: { state: 'error', attempts: 5, giveUpReason: 'gave up after 5 respawns' },
  },
  {
    name: 'agentctl start from error gives a fresh budget, so the next crash respawns at +0',
    from: errored,
    steps: [manualStart(T0 + min), exit(T0 + min + s), respawned(T0 + min + s), exit(T0 + min + 2 * s)],
    decisions: [NONE, NOW, NONE, until(T0 + min + 2 * s + 10 * s)],
    final: { state: 'waiting', attempts: 1, giveUpReason: null },
  },
  {
    name: 'agentctl restart of a crash-looping app resets the budget to 0',
    from: waiting(4, T0 + 81 * s),
    steps: [manualStart(T0 + 10 * s)],
    decisions: [NONE],
    final: { state: 'running', attempts: 0, nextAttemptAt: null, lastStartAt: T0 + 10 * s },
  },
  {
    name: 'a stopped app is not respawned when its process exits',
    from: running(2, T0),
    steps: [stopped(T0 + s), exit(T0 + 2 * s), tick(T0 + 10 * min)],
    decisions: [NONE, NONE, NONE],
    final: { state: 'stopped', attempts: 2 },
  },
  {
    name: 'a lastStartAt in the future counts as now, so uptime starts now and nothing refills early',
    from: running(3, T0 + 60 * min),
    steps: [tick(T0), tick(T0 + 10 * min - 1), tick(T0 + 10 * min)],
    decisions: [NONE, NONE, REFILL],
    final: { attempts: 0, lastStartAt: T0 },
  },
  {
    name: 'a crash of a process whose start lies in the future is an early death, not a healthy one',
    from: running(2, T0 + 60 * min),
    steps: [exit(T0)],
    decisions: [until(T0 + 20 * s)],
    final: { attempts: 2, lastExitAt: T0 },
  },
  {
    name: 'a nextAttemptAt further ahead than the longest wait is clamped to now plus that wait',
    from: waiting(2, T0 + 24 * 60 * min),
    steps: [tick(T0), tick(T0 + 20 * s)],
    decisions: [until(T0 + 20 * s), NOW],
  },
  {
    name: 'a nextAttemptAt within the wait is kept as it is',
    from: waiting(2, T0 + 15 * s),
    steps: [tick(T0)],
    decisions: [until(T0 + 15 * s)],
  },
  {
    name: 'an exit stamped after now counts as now',
    from: running(1, T0),
    steps: [{ obs: { kind: 'exited', at: T0 + 60 * min, code: null, signal: 'SIGSEGV' }, now: T0 + s }],
    decisions: [until(T0 + s + 10 * s)],
    final: { lastExitAt: T0 + s, lastExit: { code: null, signal: 'SIGSEGV' } },
  },
  {
    name: 'an exit stamped before its process started counts as 0 ms of uptime',
    from: running(5, T0 + 10 * s),
    steps: [{ obs: { kind: 'exited', at: T0, code: 1, signal: null }, now: T0 + 20 * s }],
    decisions: [GIVE_UP],
    final: { state: 'error', giveUpReason: 'gave up after 5 respawns: the last process exited with code 1 after 0 ms, before healthyMs 600000' },
  },
  {
    name: 'a give-up names the signal that killed the last process',
    from: running(5, T0),
    steps: [exit(T0 + 2 * s, null, 'SIGKILL')],
    decisions: [GIVE_UP],
    final: { state: 'error', giveUpReason: 'gave up after 5 respawns: the last process was killed by SIGKILL after 2000 ms, before healthyMs 600000' },
  },
];

for (const c of eventCases) {
  test(c.name, () => {
    const policy = { ...defaults, ...c.policy };
    const from = { ...initialSupervisorState(), ...c.from };
    const { decisions, last } = runSteps(policy, from, c.steps);
    assert.deepEqual(
      decisions.map((d) => (d.action === 'give-up' ? GIVE_UP : d)),
      c.decisions,
    );
    for (const [key, value] of Object.entries(c.final ?? {})) {
      assert.deepEqual(last[key as keyof SupervisorRecordState], value, `final ${key}`);
    }
  });
}

test('decide does not change the record it is given', () => {
  const record: SupervisorRecordState = { ...initialSupervisorState(), state: 'running', attempts: 2, lastStartAt: T0 + 60 * min };
  const copy = structuredClone(record);
  decide(record, { kind: 'exited', at: T0, code: 1, signal: null }, defaults, T0);
  assert.deepEqual(record, copy);
});

test('every record decide returns survives a JSON round trip', () => {
  const { last } = runCrashLoop(defaults, [s, s, s, s, s, s]);
  assert.deepEqual(JSON.parse(JSON.stringify(last)), last);
});

// A simulated fleet for the automated analysis end to end (docs/design.md §19): FakeNodes (real keys,
// real signatures) enrolled in a real control plane on a fake clock, heartbeating through its HTTP
// API once a simulated minute (heartbeat v7) and answering every attempt `active`; each heartbeat
// carries the node's app `signals`, whose counters grow by seeded Poisson noise around the rates of
// the version it runs (test/helpers/signal-noise.ts), and the control plane keeps them as it keeps
// any agent's (one sample per node and minute, src/control/analysis/record-signals.ts).
import type { AppSignals } from '../../src/core/heartbeat-schema.js';
import type { JudgeStep } from '../../src/control/rollouts/judge-steps.js';
import type { StoreBackend } from './store-backends.js';
import { FakeClock, FakeNode, MINUTE, T0, startControlInProcess, startControlOn, tickThrough, type Control } from './control-harness.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { mulberry32 } from './prng.js';
import { loadFactor, poisson, type NodeBehaviour } from './signal-noise.js';

// A quiet web app: rare restarts and probe failures, 60 requests a minute per node, 0.1 % errors.
export const QUIET: NodeBehaviour = { restartsPerHour: 0.2, livenessPerHour: 0.1, requestsPerMinute: 60, errorRatio: 0.001 };
// The same release with 2 % errors.
export const ERRORS_2PCT: NodeBehaviour = { ...QUIET, errorRatio: 0.02 };
// The same release restarting thirty times an hour (a crash every two minutes: one a 5-minute
// window sees on most nodes).
export const RESTARTING: NodeBehaviour = { ...QUIET, restartsPerHour: 30 };
// An app that serves nothing: its request counter stands still.
export const IDLE: NodeBehaviour = { ...QUIET, requestsPerMinute: 0 };

export interface AnalysisFleetOptions {
  nodes: number;
  seed: number;
  // How the old version (1.0.0) and the new one (1.1.0) behave.
  old: NodeBehaviour;
  next: NodeBehaviour;
  // Passed to the control plane (the bench wraps the judgement to count its CPU).
  judge?: JudgeStep;
}

interface Counters {
  restarts: number;
  liveness: number;
  requests: number;
  errors: number;
  load: number;
}

export class AnalysisFleet {
  readonly nodes: FakeNode[] = [];
  private readonly counters = new Map<string, Counters>();
  private readonly rand: () => number;
  minutes = 0;

  private constructor(readonly control: Control<ControlStore>, readonly opts: AnalysisFleetOptions) {
    this.rand = mulberry32(opts.seed);
  }

  // Starts a control plane (on `backend`, or SQLite in-process when null), enrolls the nodes on
  // web 1.0.0 with web 1.1.0 in the catalog, and sends each node's first heartbeat.
  static async start(backend: StoreBackend | null, opts: AnalysisFleetOptions): Promise<AnalysisFleet> {
    const clock = new FakeClock(T0 - (T0 % MINUTE));
    const o = { heartbeatSeconds: 60, tickMs: 0, clock, ...(opts.judge ? { judge: opts.judge } : {}) };
    const control = backend ? await startControlOn(backend, o) : ((await startControlInProcess(o)) as unknown as Control<ControlStore>);
    const fleet = new AnalysisFleet(control, opts);
    await control.addRelease('web', '1.0.0');
    await control.addRelease('web', '1.1.0');
    const like = { clock, server: control.server, token: () => control.token() };
    for (let i = 0; i < opts.nodes; i++) {
      const n = await new FakeNode(like, `host-${i}`).enroll();
      n.setCurrent('web', '1.0.0');
      fleet.nodes.push(n);
      fleet.counters.set(n.nodeId, { restarts: 0, liveness: 0, requests: 10_000, errors: 10, load: loadFactor(fleet.rand) });
    }
    await fleet.beat();
    return fleet;
  }

  get store(): ControlStore {
    return this.control.store;
  }

  // One simulated minute: the clock moves on, every node's counters grow, every node heartbeats
  // with its signals (and answers what it is asked), and the rollout ticker ticks.
  async minute(): Promise<void> {
    this.control.clock.advance(MINUTE);
    this.minutes++;
    this.grow();
    await this.beat();
    await tickThrough(this.control);
  }

  // Minutes until `done` says so (or `max` minutes): how many it took.
  async until(max: number, done: () => Promise<boolean>): Promise<number> {
    for (let i = 1; i <= max; i++) {
      await this.minute();
      if (await done()) return i;
    }
    throw new Error(`not done within ${max} simulated minutes`);
  }

  private async beat(): Promise<void> {
    // A few at a time: the server answers them as a fleet's heartbeats arrive.
    const queue = [...this.nodes];
    const worker = async () => {
      for (let n = queue.shift(); n; n = queue.shift()) await this.answer(n);
    };
    await Promise.all(Array.from({ length: 8 }, worker));
  }

  // A v7 heartbeat with the node's signals; each desired entry answered `active` in a second one.
  private async answer(n: FakeNode): Promise<void> {
    n.apps = n.apps.map((a) => (a.name === 'web' ? ({ ...a, signals: this.signalsOf(n.nodeId) } as never) : a));
    const first = await n.heartbeat({ v: 7 });
    if (first.status !== 200) throw new Error(`heartbeat: ${first.status} ${JSON.stringify(first.body)}`);
    const desired = first.body.desired as Array<{ app: string; version: string; attemptId: string }>;
    if (desired.length === 0) return;
    const receipts = desired.map((d) => n.receipt({ app: d.app, attemptId: d.attemptId, targetVersion: d.version, outcome: 'active' }));
    for (const d of desired) n.setCurrent(d.app, d.version);
    n.apps = n.apps.map((a) => (a.name === 'web' ? ({ ...a, signals: this.signalsOf(n.nodeId) } as never) : a));
    const second = await n.heartbeat({ v: 7, receipts });
    if (second.status !== 200) throw new Error(`heartbeat: ${second.status} ${JSON.stringify(second.body)}`);
  }

  // This minute's growth of every node's counters, by the version it runs.
  private grow(): void {
    for (const n of this.nodes) {
      const b = n.apps.find((a) => a.name === 'web')?.current === '1.1.0' ? this.opts.next : this.opts.old;
      const c = this.counters.get(n.nodeId)!;
      c.restarts += poisson(this.rand, b.restartsPerHour / 60);
      c.liveness += poisson(this.rand, b.livenessPerHour / 60);
      const req = b.requestsPerMinute === null ? 0 : poisson(this.rand, b.requestsPerMinute * c.load);
      c.requests += req;
      c.errors += poisson(this.rand, req * b.errorRatio);
    }
  }

  private signalsOf(nodeId: string): AppSignals {
    const c = this.counters.get(nodeId)!;
    const metrics = this.opts.old.requestsPerMinute !== null;
    return {
      since: new Date(T0 - 3_600_000).toISOString(), restarts: c.restarts, livenessFailures: c.liveness, watchdogKills: 0, oomKills: 0, cpuSeconds: this.minutes, rssBytes: 50_000_000,
      ...(metrics ? { requests: c.requests, errors: c.errors, scrape: { ok: true, at: new Date(this.control.clock.now()).toISOString() } } : {}),
    };
  }

  close(): Promise<void> {
    return this.control.close();
  }
}

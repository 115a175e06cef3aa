// The zero-downtime handover of an app with sockets (docs/design.md §17): the new version starts
// beside the running one on the same sockets (its keeper holds them: sockets/keeper-client.ts),
// the helper waits for its readiness, then stops the old one (SIGTERM, its stopTimeoutMs to
// drain), then runs the health check. A new version that is never ready is stopped, and the old
// one never was. Each phase is in the journal with both processes (journal-schema.ts `handover`).
import type { Journal } from '../../core/journal-schema.js';
import type { ReleaseFile } from '../../core/release-schemas.js';
import { logger } from '../../platform/log.js';
import { readRunRecord, writeRunRecord } from '../runners/run-record.js';
import type { StartedProcess } from '../runners/runner.js';
import { appTarget, isAppAlive, probeSpecOf, startVersion } from './app-process.js';
import type { UpdateContext } from './context.js';
import { writeJournal } from './journal.js';
import type { ProbeResult } from './probe.js';
import type { ReadyWait } from './ready-wait.js';
import { openReady, readyBudgetOf, type StartHooks } from './start-and-probe.js';

const log = logger('helper:handover');

// A handover's verdict. `oldKept`: the new version never became ready, was stopped, and the old
// process runs on as the app's recorded process: nothing is left to start.
export type HandoverResult = ProbeResult & { oldKept?: boolean };

// Hands the app over from its running process to a new process of `version`, or returns null when
// no handover applies: the app has no sockets, nothing of it runs (a plain start then finds its
// connections queued on the sockets), or the release does not say when it is ready (then the old
// process is stopped first and the new one started, the sockets held throughout).
export async function handOver(
  ctx: UpdateContext,
  app: string,
  version: string,
  release: ReleaseFile,
  journal: Journal,
  hooks: StartHooks = {},
): Promise<HandoverResult | null> {
  const cfg = ctx.config.apps[app];
  if (cfg?.runner !== 'process' || !cfg.sockets || !ctx.runner.stopOne) return null;
  const rec = await readRunRecord(ctx.paths, app).catch(() => null);
  if (!rec || rec.expected !== 'running' || !rec.process || !(await isAppAlive(ctx, app, rec.process))) return null;
  if (release.start?.ready !== 'fd') {
    log('app=%s version=%s does not say when it is ready (start.ready "fd"): the old process stops before it starts; its sockets stay open', app, version);
    return null;
  }
  const old = rec.process;
  // The sockets are held by the app's keeper: one that is gone (killed, crashed) left them only
  // in the running process, and a new keeper cannot bind them beside it. Then the old process
  // stops first and the start makes a new keeper: this once, connections are refused between.
  if (ctx.runner.reattach && !(await ctx.runner.reattach(app, old).catch(() => null))) {
    log('app=%s: its socket keeper does not answer; the old process stops before the new one starts', app);
    return null;
  }
  const { paths, faults, clock } = ctx;
  await writeJournal(paths, { ...journal, updatedAt: clock.now(), handover: { phase: 'start', old } }, faults);
  faults.hit('after-handover-start');
  // Never null here: the release asks for readiness, and the app is a process app.
  const ready = (await openReady(ctx, app, release)) as ReadyWait;
  const budget = readyBudgetOf(release);
  const began = clock.monotonic();
  let proc: StartedProcess;
  try {
    proc = await startVersion(ctx, app, version);
  } catch (err) {
    ready.close();
    await writeRunRecord(paths, rec);
    return { ok: false, oldKept: true, reason: `it did not start: ${(err as Error).message}` };
  }
  hooks.afterStart?.();
  hooks.onProbe?.();
  const r = await ready.wait(budget, proc.exited);
  if (!r.ok) {
    // Never ready: it goes, the old process never stopped serving and is the app's again.
    await ctx.runner.stopOne(await appTarget(ctx, app, { ...rec, process: proc.identity }), { timeoutMs: cfg.stopTimeoutMs });
    await writeRunRecord(paths, await keptRecord(ctx, app, rec));
    log('handover app=%s to %s withdrawn: %s; pid %d serves on', app, version, r.reason, old.pid);
    return { ok: false, oldKept: true, reason: r.reason, code: r.code };
  }
  await writeJournal(paths, { ...journal, updatedAt: clock.now(), handover: { phase: 'ready', old, new: proc.identity } }, faults);
  faults.hit('after-handover-ready');
  await writeJournal(paths, { ...journal, updatedAt: clock.now(), handover: { phase: 'drain', old, new: proc.identity } }, faults);
  await ctx.runner.stopOne(await appTarget(ctx, app, rec), { timeoutMs: cfg.stopTimeoutMs });
  faults.hit('after-handover-drain');
  log('handover app=%s from pid %d to pid %d (%s) in %d ms', app, old.pid, proc.identity.pid, version, Math.round(clock.monotonic() - began));
  const spec = probeSpecOf(release, false);
  spec.timeoutMs = Math.max(1, spec.timeoutMs - (clock.monotonic() - began));
  return ctx.probe(spec, { clock, isAlive: () => isAppAlive(ctx, app, proc.identity) });
}

// The record of the process kept, as it was before the handover, with the supervisor state the
// new start wrote dropped: the kept process's count of restarts goes on from where it was.
async function keptRecord(ctx: UpdateContext, app: string, before: NonNullable<Awaited<ReturnType<typeof readRunRecord>>>) {
  const now = await readRunRecord(ctx.paths, app).catch(() => null);
  return { ...before, ...(now?.instance ? { instance: now.instance } : {}) };
}

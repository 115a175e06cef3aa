import type { ReleaseFile } from '../../core/release-schemas.js';
import { appFdPath, ensureAppFds } from '../runners/app-fds.js';
import type { StartedProcess } from '../runners/runner.js';
import { wantsConfirm } from './agent-confirm.js';
import { isAppAlive, probeSpecOf, startVersion } from './app-process.js';
import type { UpdateContext } from './context.js';
import type { ProbeResult } from './probe.js';
import { openReadyWait, type ReadyWait } from './ready-wait.js';

export interface StartHooks {
  afterStart?: () => void;
  // Once, at the probe's first look at the process.
  onProbe?: () => void;
}

// How long an app without a health block may take to say it is ready (health.timeoutMs's default).
const READY_DEFAULT_TIMEOUT_MS = 30_000;

// Starts `version` of the app and probes it (docs/design.md §4). A release of steward-agent that asks
// for it, on an enrolled host, is probed by the confirm of the very process started here
// (docs/design.md §14): the wait opens before the start, so a quick agent's confirm is not lost, and
// closes with the probe. A release with `start.ready: "fd"` is probed only once it said it is ready
// (docs/design.md §17): the readiness wait and the probe's first success share health.timeoutMs, and
// an app that closes its readiness fd (or exits) without the newline fails at once. A failure to
// start is a failed probe.
export async function startAndProbe(ctx: UpdateContext, app: string, version: string, release: ReleaseFile, attemptId: string, hooks: StartHooks = {}): Promise<ProbeResult> {
  const confirm = await wantsConfirm(ctx.paths, app, release);
  const wait = confirm ? ctx.agentConfirms.expect(version, attemptId) : null;
  let ready: ReadyWait | null = null;
  try {
    let proc: StartedProcess;
    try {
      ready = await openReady(ctx, app, release);
      proc = await startVersion(ctx, app, version);
    } catch (err) {
      return { ok: false, reason: `it did not start: ${(err as Error).message}` };
    }
    wait?.started(proc.identity);
    hooks.afterStart?.();
    let probed = false;
    const onProbe = () => {
      if (probed) return;
      probed = true;
      hooks.onProbe?.();
    };
    const spec = probeSpecOf(release, confirm);
    if (ready) {
      const budget = readyBudgetOf(release);
      const start = ctx.clock.monotonic();
      onProbe();
      const r = await ready.wait(budget, proc.exited);
      if (!r.ok) return { ok: false, reason: r.reason, code: r.code };
      spec.timeoutMs = Math.max(1, spec.timeoutMs - (ctx.clock.monotonic() - start));
    }
    return await ctx.probe(spec, {
      clock: ctx.clock,
      isAlive: () => {
        onProbe();
        return isAppAlive(ctx, app, proc.identity);
      },
      ...(wait ? { confirmed: (t: number) => wait.confirmed(t) } : {}),
    });
  } finally {
    ready?.close();
    wait?.close();
  }
}

// How long an activation waits for the app's readiness newline, with its probe's first success
// (the same budget): health.timeoutMs, 30 s without a health block.
export function readyBudgetOf(release: ReleaseFile): number {
  return release.health ? release.health.timeoutMs : READY_DEFAULT_TIMEOUT_MS;
}

// The readiness wait of a release that asks for one, listening before the app starts.
export async function openReady(ctx: UpdateContext, app: string, release: ReleaseFile): Promise<ReadyWait | null> {
  const start = release.start;
  if (start?.ready !== 'fd' || ctx.config.apps[app]?.runner !== 'process') return null;
  const runAs = await ctx.runAs(app);
  await ensureAppFds(ctx.paths, app, start, runAs?.uid ?? null);
  return openReadyWait(appFdPath(ctx.paths, app, 'ready'), ctx.clock);
}

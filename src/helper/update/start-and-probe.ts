import type { ReleaseFile } from '../../core/release-schemas.js';
import type { StartedProcess } from '../runners/runner.js';
import { wantsConfirm } from './agent-confirm.js';
import { isAppAlive, probeSpecOf, startVersion } from './app-process.js';
import type { UpdateContext } from './context.js';
import type { ProbeResult } from './probe.js';

export interface StartHooks {
  afterStart?: () => void;
  // Once, at the probe's first look at the process.
  onProbe?: () => void;
}

// Starts `version` of the app and probes it (docs/design.md §4). A release of steward-agent that asks
// for it, on an enrolled host, is probed by the confirm of the very process started here
// (docs/design.md §14): the wait opens before the start, so a quick agent's confirm is not lost, and
// closes with the probe. A failure to start is a failed probe.
export async function startAndProbe(ctx: UpdateContext, app: string, version: string, release: ReleaseFile, attemptId: string, hooks: StartHooks = {}): Promise<ProbeResult> {
  const confirm = await wantsConfirm(ctx.paths, app, release);
  const wait = confirm ? ctx.agentConfirms.expect(version, attemptId) : null;
  try {
    let proc: StartedProcess;
    try {
      proc = await startVersion(ctx, app, version);
    } catch (err) {
      return { ok: false, reason: `it did not start: ${(err as Error).message}` };
    }
    wait?.started(proc.identity);
    hooks.afterStart?.();
    let first = true;
    return await ctx.probe(probeSpecOf(release, confirm), {
      clock: ctx.clock,
      isAlive: () => {
        if (first) {
          first = false;
          hooks.onProbe?.();
        }
        return isAppAlive(ctx, app, proc.identity);
      },
      ...(wait ? { confirmed: (t: number) => wait.confirmed(t) } : {}),
    });
  } finally {
    wait?.close();
  }
}

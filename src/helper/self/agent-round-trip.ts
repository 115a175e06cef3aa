import { AGENT_APP } from '../../core/name-checks.js';
import { SELF_APP } from '../../core/self-schemas.js';
import { isSameProcessAlive, readProcIdentity, type ProcIdentity } from '../../platform/proc-identity.js';
import { readRunRecord } from '../runners/run-record.js';
import type { UpdateContext } from '../update/context.js';
import { readJournal } from '../update/journal.js';

// Opens the trial's wait for the round trip with the agent (docs/design.md §14, step 3) of steward
// `version`, before helper.sock is bound: `confirmed` resolves once the agent app's running process
// confirms a heartbeat the control plane answered while this helper ran (agent-confirm.ts).
// A request of any other process, or one of the agent's that is no such confirm, proves
// nothing: the group of helper.sock is wider than the agent.
export async function expectAgentRoundTrip(ctx: Pick<UpdateContext, 'paths' | 'config' | 'units' | 'agentConfirms'>, version: string): Promise<{ confirmed: Promise<void> }> {
  const j = await readJournal(ctx.paths, SELF_APP);
  const attemptId = j.state === 'ok' && j.journal.targetVersion === version ? j.journal.attemptId : `trial-${version}`;
  return { confirmed: ctx.agentConfirms.expectTrial(version, attemptId, () => runningAgent(ctx)) };
}

// The agent app's process that runs now, or null: a `unit` app's MainPID, else the one the
// supervisor's record names while it lives.
async function runningAgent(ctx: Pick<UpdateContext, 'paths' | 'config' | 'units'>): Promise<ProcIdentity | null> {
  const cfg = ctx.config.apps[AGENT_APP];
  if (cfg?.runner === 'unit') {
    const st = await ctx.units.status(cfg.unit).catch(() => null);
    return st && st.mainPid > 0 ? readProcIdentity(st.mainPid) : null;
  }
  const rec = await readRunRecord(ctx.paths, AGENT_APP).catch(() => null);
  const proc = rec?.process ?? null;
  return proc && (await isSameProcessAlive(proc)) ? proc : null;
}

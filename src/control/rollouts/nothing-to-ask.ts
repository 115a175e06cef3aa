// Why a start would ask nobody (docs/design.md §11): every selected node left out of the run's
// first plan, grouped by why, each named with its hostname. A start (and its dry run) is refused
// with this instead of a run that "succeeds" with nobody confirmed.
import { escapeControlChars } from '../../core/control-chars.js';
import type { NodeState, Plan } from '../../core/rollout-planner.js';

// Node ids named for each reason; past them, a count.
const NAMED_PER_REASON = 5;

// Why a node in each state (and, for a skipped one, its reason) is not asked (for one node, for
// several), in the order the message lists them.
function reasonOf(state: NodeState, reason: string | null, app: string, version: string): [string, string] | null {
  switch (state) {
    case 'excluded-reverted':
      return [`rolled back or failed ${app} ${version} before (REVERTED_BEFORE; --allow-retry-reverted asks again)`, `rolled back or failed ${app} ${version} before (REVERTED_BEFORE; --allow-retry-reverted asks again)`];
    case 'already-current':
      return [`already runs ${version} (REPORTED)`, `already run ${version} (REPORTED)`];
    case 'skipped':
      return reason === 'CLOCK_SKEW'
        ? ['has its heartbeats refused for its clock (CLOCK_SKEW: `nodes` shows its skew)', 'have their heartbeats refused for their clocks (CLOCK_SKEW: `nodes` shows their skew)']
        : ['sent no heartbeat in the last 3 intervals (NO_RECENT_HEARTBEAT)', 'sent no heartbeat in the last 3 intervals (NO_RECENT_HEARTBEAT)'];
    case 'not-targeted':
      return [`does not run ${app} (APP_NOT_ON_NODE)`, `do not run ${app} (APP_NOT_ON_NODE)`];
    default:
      return null;
  }
}

const ORDER: NodeState[] = ['excluded-reverted', 'already-current', 'skipped', 'not-targeted'];

// The sentence saying why none of the nodes of `plan` would be asked (its caller checked that
// none is pending): `nothing to do for web 1.1.0: none of the 2 selected nodes would be asked: 1
// node rolled back or failed web 1.1.0 before (...): n-1a2b (web-1); 1 node already runs 1.1.0
// (REPORTED): n-3c4d (web-2)`.
export function nobodyToAsk(app: string, version: string, plan: Plan, hostnames: ReadonlyMap<string, string>): string {
  // One group per state and reason: skipped nodes are NO_RECENT_HEARTBEAT or CLOCK_SKEW.
  const groups = new Map<string, { state: NodeState; reason: string | null; ids: string[] }>();
  for (const [nodeId, n] of Object.entries(plan.nodes)) {
    const key = `${n.state} ${n.reason ?? ''}`;
    const group = groups.get(key) ?? { state: n.state, reason: n.reason, ids: [] };
    group.ids.push(nodeId);
    groups.set(key, group);
  }
  const rank = (s: NodeState) => (ORDER.includes(s) ? ORDER.indexOf(s) : ORDER.length);
  const parts = [...groups.values()]
    .sort((a, b) => rank(a.state) - rank(b.state) || String(a.reason).localeCompare(String(b.reason)))
    .map(({ state, reason, ids }) => {
      const [one, many] = reasonOf(state, reason, app, version) ?? [`is ${state}`, `are ${state}`];
      const named = ids.slice(0, NAMED_PER_REASON).map((id) => `${id} (${escapeControlChars(hostnames.get(id) ?? '?')})`);
      const more = ids.length > NAMED_PER_REASON ? ` and ${ids.length - NAMED_PER_REASON} more` : '';
      return `${ids.length} ${ids.length === 1 ? `node ${one}` : `nodes ${many}`}: ${named.join(', ')}${more}`;
    });
  const total = Object.keys(plan.nodes).length;
  return `nothing to do for ${app} ${version}: none of the ${total} selected node${total === 1 ? '' : 's'} would be asked: ${parts.join('; ')}`;
}

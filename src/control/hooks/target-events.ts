// The events of a target (docs/design.md §19): target.set when an operator sets it, and the
// transitions of its status that people want to hear of: target.converged when every node it
// selects runs its version, target.behind when a target that had converged at its version has
// nodes behind again (a node reverted, came back at an old version, or joined behind). A status
// is a reading of the fleet, not a stored change, so the last one seen is kept (hook_marks, as
// `<version> <status>`) and the event is queued in the transaction that records the new one:
// two instances that see the same change both try to record it, and the store lets one commit.
import type { StoreReader, StoreTx, TargetRow } from '../store/store.js';
import type { TargetReading } from '../targets/read-target.js';
import { targetView, type TargetView } from '../targets/target-view.js';
import { emitEvent } from './emit-event.js';

// The nodes behind that an event lists, at most.
const MAX_LISTED = 50;

const subjectOf = (name: string) => `target/${name}`;
const markOf = (v: Pick<TargetView, 'version' | 'status'>) => `${v.version} ${v.status}`;

// Queues target.set for a target just set (created, or changed), in its transaction.
export async function emitTargetSet(tx: StoreTx, t: TargetRow, previous: TargetRow | null): Promise<void> {
  await tx.hooks.setMark(subjectOf(t.name), `${t.version} set`, await tx.now());
  await emitEvent(tx, 'target.set', subjectOf(t.name), {
    target: { name: t.name, app: t.app, version: t.version, priority: t.priority, selector: t.policy.selector, paused: t.paused, setBy: t.setBy },
    previousVersion: previous?.version ?? null,
  });
}

// Whether the reading's status differs from the one last recorded (a write is due).
export async function targetStatusChanged(tx: StoreReader, r: TargetReading): Promise<boolean> {
  return (await tx.hooks.mark(subjectOf(r.target.name))) !== markOf(targetView(r));
}

// Records the reading's status, and queues the event its transition makes, if any. A target seen
// for the first time (none recorded) is recorded and tells nothing.
export async function recordTargetStatus(tx: StoreTx, r: TargetReading): Promise<void> {
  const view = targetView(r);
  const subject = subjectOf(view.name);
  const before = await tx.hooks.mark(subject);
  const now = markOf(view);
  if (before === now) return;
  await tx.hooks.setMark(subject, now, await tx.now());
  if (before === null) return;
  const [version, status] = before.split(' ');
  if (view.status === 'converged') await emitEvent(tx, 'target.converged', subject, dataOf(view));
  else if (version === view.version && status === 'converged' && (view.status === 'converging' || view.status === 'halted')) await emitEvent(tx, 'target.behind', subject, dataOf(view));
}

function dataOf(v: TargetView): Record<string, unknown> {
  const behind = v.nodes.filter((n) => n.state === 'behind');
  return {
    target: { name: v.name, app: v.app, version: v.version, priority: v.priority, selector: v.selector, status: v.status },
    counts: v.counts,
    reasons: Object.fromEntries(Object.entries(v.behind).filter(([, n]) => n > 0)),
    behind: behind.slice(0, MAX_LISTED).map((n) => ({ nodeId: n.nodeId, hostname: n.hostname, version: n.version, reason: n.reason?.reason ?? null, code: n.reason?.code ?? null, message: n.reason?.message ?? null })),
    ...(behind.length > MAX_LISTED ? { behindNotListed: behind.length - MAX_LISTED } : {}),
    halted: v.halted,
  };
}

// A node: its facts, its apps, and its receipt timeline (newest first). A failed version's
// reason, log file and log lines are shown to operators (a viewer reads everything else).
import { readAll } from '../api.js';
import type { NodeView, ReceiptView } from '../api-types.js';
import { h, table, type Child } from '../dom.js';
import { exactTime, flag, mono, state, when } from '../format.js';
import type { Page, PageContext } from '../page.js';
import { appCell, heartbeat, labels, skew, trust } from './fleet.js';
import { receiptRows } from './receipts.js';

export function nodePage(ctx: PageContext, nodeId: string): Page {
  return {
    title: `Node ${nodeId}`,
    async load() {
      const [{ items: nodes }, { items: receipts }] = await Promise.all([readAll<NodeView>('nodes', 'nodes'), readAll<ReceiptView>('receipts', 'receipts', { node: nodeId })]);
      const n = nodes.find((x) => x.nodeId === nodeId);
      if (!n) return h('p', { class: 'banner bad' }, `Node ${nodeId} is not enrolled (removed, or a wrong link).`);
      const now = Date.now();
      const newest = [...receipts].reverse();
      return h(
        'div',
        {},
        h('h2', { class: 'host' }, n.hostname),
        table(
          ['node', 'labels', 'heartbeat', 'clock skew', 'trust', 'enrolled', 'agent', 'boot', 'receipts lost'],
          [[mono(n.nodeId), labels(n.labels), heartbeat(n), skew(n), trust(n), when(n.enrolledAt, now), mono(n.agentVersion), mono(n.bootId), n.receiptLost.length ? flag(n.receiptLost.join(', '), 'bad') : '-']],
          { class: 'narrow' },
        ),
        h('h2', {}, 'Apps'),
        table(
          ['app', 'current, supervisor', 'previous', 'pid', 'start attempts', 'restarts since activation', 'state since', 'last exit', 'watch window', 'hold'],
          n.apps.map((a) => [
            mono(a.name),
            appCell(a),
            mono(a.previous),
            a.supervisor.pid ?? '-',
            a.supervisor.attempts,
            a.restarts ?? '-',
            when(a.supervisor.since, now),
            a.lastExit ? `${a.lastExit.reason ? `${a.lastExit.reason}: ` : ''}${a.lastExit.signal ? `signal ${a.lastExit.signal}` : a.lastExit.code !== null ? `exit ${a.lastExit.code}` : 'unknown'}` : '-',
            a.watch ? `${a.watch.version} until ${exactTime(a.watch.until)} (${a.watch.restarts} of ${a.watch.maxRestarts} exits)` : '-',
            // The host's hold (heartbeat v6, docs/design.md §18); an older agent says `held` alone.
            a.hold ? `${a.hold.by} since ${exactTime(a.hold.at)}: ${a.hold.reason}; ${a.hold.until === null ? 'until release-hold' : `until ${exactTime(a.hold.until)}`}` : a.held ? 'held' : '-',
          ]),
          { data: { table: 'apps' } },
        ),
        h('h2', {}, `Receipts (${receipts.length})`),
        newest.length ? table(['received', 'app', 'seq', 'outcome', 'from → to', 'reason', 'attempt', 'run'], receiptRows(newest, now, false), { data: { table: 'receipts' } }) : h('p', { class: 'muted' }, 'No receipt from this node yet.'),
        failedLogs(ctx, newest),
      );
    },
  };
}

// The failed versions of this node: each rolled-back or failed receipt's reason and log.
function failedLogs(ctx: PageContext, newest: ReceiptView[]): Child {
  const failed = newest.filter((r) => r.outcome === 'rolled-back' || r.outcome === 'failed');
  if (failed.length === 0) return null;
  if (!ctx.canChange) return h('p', { class: 'muted' }, `${failed.length} failed version(s): their log lines are for operators.`);
  return h(
    'div',
    { data: { section: 'failed-logs' } },
    h('h2', {}, 'Failed versions'),
    ...failed.map((r) => {
      return h(
        'div',
        { class: 'failed' },
        h('h3', {}, mono(r.app), ' ', mono(r.targetVersion), ' ', state(r.outcome), ' ', h('time', { title: exactTime(r.updatedAt) }, exactTime(r.updatedAt)), ' ', mono(r.reasonCode)),
        r.reasonMessage ? h('pre', { class: 'reason' }, r.reasonMessage) : null,
        r.logFile ? h('p', {}, 'log on the host: ', mono(r.logFile)) : null,
        r.logTail !== null ? h('pre', { class: 'log' }, r.logTail) : h('p', { class: 'muted' }, 'This receipt carries no log lines.'),
      );
    }),
  );
}

// One rollout (the latest run of an app): its progress canary to batches, the bake, every
// node's state, the halt reason, failures against the budget, windows, the nodes behind (and
// ahead), the app's earlier runs; for operators, pause / resume / stop / retry (retry shows its
// dry run first).
import { change, read, readAll } from '../api.js';
import type { DryRunView, NodeView, RunSummary, RunView } from '../api-types.js';
import { h, replace, table, type Child } from '../dom.js';
import { duration, mono, state, when } from '../format.js';
import type { Page, PageContext } from '../page.js';
import { analysisSection } from './analysis.js';
import { progressBar } from './progress.js';
import { budget, dryRunView, runsTable } from './rollouts.js';

// The app's earlier runs shown under its latest.
const EARLIER_RUNS = 10;

export function rolloutPage(ctx: PageContext, app: string): Page {
  // The retry preview lives outside the refreshed part, so a refresh keeps it on screen.
  const preview = h('div', { class: 'preview', data: { section: 'preview' } });
  return {
    title: `Rollout of ${app}`,
    controls: preview,
    async load() {
      const [{ runs }, { items: fleet }, history] = await Promise.all([
        read<{ runs: RunView[] }>('rollout status', { app }),
        readAll<NodeView>('nodes', 'nodes'),
        read<{ runs: RunSummary[]; nextCursor: string | null }>('rollout list', { app, limit: String(EARLIER_RUNS + 1) }),
      ]);
      const hostOf = new Map(fleet.map((n) => [n.nodeId, n.hostname]));
      const nodeLink = (nodeId: string) => h('a', { href: `#node/${encodeURIComponent(nodeId)}`, title: nodeId }, hostOf.get(nodeId) ?? nodeId);
      const r = runs[0];
      if (!r) return h('p', { class: 'muted' }, `No rollout of ${app}.`);
      const now = Date.now();
      return h(
        'div',
        { data: { run: String(r.id), status: r.status } },
        h('h2', {}, mono(r.app), ' ', mono(r.version), ` run #${r.id} `, state(r.status), r.retryOf ? h('span', { class: 'muted' }, ` (retry of #${r.retryOf})`) : null),
        ctx.canChange ? actions(ctx, r, preview) : null,
        r.haltReason ? h('div', { class: 'banner bad halt', data: { section: 'halt' } }, h('strong', {}, 'Halted: '), mono(r.haltReason.code), r.haltReason.nodeId ? h('span', {}, ' on ', nodeLink(r.haltReason.nodeId)) : null, h('div', { class: 'reason' }, r.haltReason.message)) : null,
        progressBar(r.nodes),
        bake(r, now),
        analysisSection(r, now),
        table(
          ['targeted', 'confirmed', 'already current', 'pending', 'refused', 'reverted', 'not targeted', 'behind', 'failures / budget', 'refused limit'],
          [[r.counts.targeted, r.counts.confirmed, r.counts.alreadyCurrent, r.counts.pending, r.counts.refused, r.counts.reverted, r.counts.notTargeted, r.counts.behind ?? 0, budget(r), `${r.counts.refused} / ${r.refusedLimit}`]],
          { class: 'narrow', data: { table: 'counts' } },
        ),
        table(
          ['selector', 'canaries', 'batch', 'bake', 'verdict timeout', 'windows', 'next window', 'start at', 'started', 'ended'],
          [[mono(r.selector || '(all)'), r.canaries, `${r.batch} (${r.batchSize} nodes)`, duration(r.bakeMs), duration(r.verdictTimeoutMs), r.windows.length ? `${r.windows.join('; ')} (${r.tz})` : 'any time', when(r.nextWindowAt, now), when(r.startAt, now), when(r.startedAt, now), when(r.endedAt, now)]],
          { class: 'narrow' },
        ),
        h('h2', {}, 'Nodes'),
        table(
          ['node', 'state', 'reason', 'batch', 'attempt', 'issued', 'not after', 'verdict', 'receipts lost'],
          r.nodes.map((n) => [
            nodeLink(n.nodeId),
            state(n.state),
            mono(n.reason),
            n.batch === null ? '-' : n.batch === 0 ? 'canary' : n.batch,
            mono(n.attemptId),
            when(n.issuedAt, now),
            when(n.notAfter, now),
            n.outcome ? h('span', { class: 'reason' }, state(n.outcome), ' ', mono(n.reasonCode), n.reasonMessage ? ` ${n.reasonMessage}` : '') : '-',
            n.receiptLost.length ? n.receiptLost.join(', ') : '-',
          ]),
          { data: { table: 'run-nodes' } },
        ),
        behind(r, nodeLink),
        h('h2', {}, `Earlier runs of ${app}`),
        runsTable(history.runs.filter((x) => x.id !== r.id).slice(0, EARLIER_RUNS), now),
        history.nextCursor || history.runs.length > EARLIER_RUNS ? h('p', { class: 'pager' }, h('a', { href: '#rollouts' }, 'every run →')) : null,
      );
    },
  };
}

function bake(r: RunView, now: number): Child {
  if (r.bakeUntil === null || r.bakeUntil <= now) return null;
  return h('p', { class: 'bake' }, 'Baking: the next batch goes out ', when(r.bakeUntil, now), ` (bake ${duration(r.bakeMs)}).`);
}

// The nodes at an older version than the last succeeded run's, and apart those at a newer one
// (ahead: not behind, and never asked to go back).
function behind(r: RunView, nodeLink: (nodeId: string) => Child): Child {
  const ahead = r.ahead ?? [];
  if (r.behind.length === 0 && ahead.length === 0) return null;
  const run = r.behindRunId ? ` (#${r.behindRunId})` : '';
  return h(
    'div',
    {},
    r.behind.length ? h('h2', {}, `Behind the last succeeded run${run}: ${r.behind.length}`) : null,
    r.behind.length ? table(['node', 'reports'], r.behind.map((b) => [nodeLink(b.nodeId), mono(b.current)]), { class: 'narrow', data: { table: 'behind' } }) : null,
    ahead.length ? h('h2', {}, `Ahead of the last succeeded run${run}: ${ahead.length}`) : null,
    ahead.length ? table(['node', 'reports'], ahead.map((b) => [nodeLink(b.nodeId), mono(b.current)]), { class: 'narrow', data: { table: 'ahead' } }) : null,
  );
}

const ACTIVE = new Set(['running', 'paused', 'waiting', 'scheduled']);

// The buttons a run's status allows.
function actions(ctx: PageContext, r: RunView, preview: HTMLElement): HTMLElement {
  const run = (command: string, body: Record<string, unknown> = {}) => async () => {
    try {
      await change(ctx.session, command, { app: r.app, ...body });
      replace(preview);
    } catch (err) {
      ctx.fail(err);
    }
    ctx.refresh();
  };
  const button = (label: string, action: string, fn: () => Promise<void>, cls = '') => h('button', { type: 'button', class: cls, data: { action }, onclick: () => void fn() }, label);
  const retryPreview = (behindOnly: boolean) => async () => {
    try {
      const plan = await change<DryRunView>(ctx.session, 'rollout retry', { app: r.app, dryRun: true, ...(behindOnly ? { behind: true } : {}) });
      replace(preview, dryRunView(plan), button(behindOnly ? 'Retry the nodes behind now' : 'Retry now', 'retry-now', run('rollout retry', behindOnly ? { behind: true } : {}), 'primary'), button('Cancel', 'cancel', async () => replace(preview)));
    } catch (err) {
      replace(preview);
      ctx.fail(err);
    }
  };
  const active = ACTIVE.has(r.status);
  return h(
    'div',
    { class: 'actions' },
    active && !r.paused && !r.pauseReason ? button('Pause', 'pause', run('rollout pause')) : null,
    // Paused by an operator, or by an inconclusive analysis: a resume lets the next step go.
    active && (r.paused || r.pauseReason) ? button('Resume', 'resume', run('rollout resume')) : null,
    active ? button('Stop', 'stop', run('rollout stop'), 'danger') : null,
    !active ? button('Retry…', 'retry', retryPreview(false)) : null,
    !active && r.behind.length ? button('Retry behind…', 'retry-behind', retryPreview(true)) : null,
  );
}

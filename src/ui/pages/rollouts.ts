// Rollouts: the latest run of each app with its progress, every run before them a page at a
// time (newest first), and for operators a form to start one, which shows the dry run (the plan
// the planner would follow) before the start.
import { change, read } from '../api.js';
import type { DryRunView, RunSummary, RunView } from '../api-types.js';
import { h, replace, table, type Child } from '../dom.js';
import { duration, mono, state, when } from '../format.js';
import type { Page, PageContext } from '../page.js';
import { progressBar } from './progress.js';

// Runs in a page of the list of every run.
export const RUNS_PAGE = 25;

// `params`: `cursor`, where the page of every run starts (the list's nextCursor; none: the
// newest), and `limit`, the runs a page shows (1 to 1000; default RUNS_PAGE).
export function rolloutsPage(ctx: PageContext, params: URLSearchParams = new URLSearchParams()): Page {
  const cursor = params.get('cursor') ?? undefined;
  const asked = Number(params.get('limit'));
  const limit = Number.isInteger(asked) && asked >= 1 && asked <= 1000 ? asked : RUNS_PAGE;
  const hashOf = (c?: string): `#${string}` => `#rollouts${c || limit !== RUNS_PAGE ? `?${new URLSearchParams({ ...(c ? { cursor: c } : {}), ...(limit !== RUNS_PAGE ? { limit: String(limit) } : {}) })}` : ''}`;
  return {
    title: 'Rollouts',
    ...(ctx.canChange ? { controls: startForm(ctx) } : {}),
    async load() {
      const [{ runs }, list] = await Promise.all([read<{ runs: RunView[] }>('rollout status'), read<{ runs: RunSummary[]; nextCursor: string | null }>('rollout list', { cursor, limit: String(limit) })]);
      const now = Date.now();
      if (runs.length === 0) return h('p', { class: 'muted' }, 'No rollout yet.');
      return h(
        'div',
        {},
        h('h2', {}, 'Latest run of each app'),
        table(
          ['app', 'version', 'run', 'status', 'progress', 'failures / budget', 'started', 'ended', 'halt reason'],
          runs.map((r) => [
            h('a', { href: `#rollout/${encodeURIComponent(r.app)}` }, mono(r.app)),
            mono(r.version),
            `#${r.id}`,
            state(r.status),
            progressBar(r.nodes),
            budget(r),
            when(r.startedAt, now),
            when(r.endedAt, now),
            r.haltReason ? h('span', { class: 'halt-inline' }, mono(r.haltReason.code), ' ', r.haltReason.message) : '-',
          ]),
          { data: { table: 'rollouts' } },
        ),
        h('h2', {}, cursor ? 'Earlier runs' : 'Every run, newest first'),
        runsTable(list.runs, now),
        h(
          'p',
          { class: 'pager' },
          cursor ? h('a', { href: hashOf(), data: { pager: 'newest' } }, '← newest runs') : null,
          cursor && list.nextCursor ? ' · ' : null,
          list.nextCursor ? h('a', { href: hashOf(list.nextCursor), data: { pager: 'older' } }, 'older runs →') : null,
        ),
      );
    },
  };
}

// A row per run of `rollout list`: its app (a link to the app's rollout page), version, status,
// times and halt reason.
export function runsTable(runs: RunSummary[], now: number): HTMLElement {
  if (runs.length === 0) return h('p', { class: 'muted' }, 'No earlier run.');
  return table(
    ['run', 'app', 'version', 'status', 'selector', 'started', 'ended', 'halt reason'],
    runs.map((r) => [
      `#${r.id}`,
      h('a', { href: `#rollout/${encodeURIComponent(r.app)}` }, mono(r.app)),
      mono(r.version),
      h('span', {}, state(r.status), r.retryOf !== null ? h('span', { class: 'muted' }, ` (retry of #${r.retryOf})`) : null),
      mono(r.selector || '(all)'),
      when(r.startedAt, now),
      when(r.endedAt, now),
      r.haltReason ? h('span', { class: 'halt-inline' }, mono(r.haltReason.code), ' ', r.haltReason.message) : '-',
    ]),
    { data: { table: 'all-runs' } },
  );
}

export function budget(r: { failures: number; maxFailures: number }): Child {
  return h('span', { class: r.failures > r.maxFailures ? 'st st-bad' : r.failures > 0 ? 'st st-warn' : '' }, `${r.failures} / ${r.maxFailures}`);
}

interface FormField {
  name: string;
  label: string;
  placeholder: string;
  // Several values, separated by `;` (windows).
  list?: boolean;
}

const START_FIELDS: FormField[] = [
  { name: 'app', label: 'app', placeholder: 'web' },
  { name: 'version', label: 'version', placeholder: '1.4.0' },
  { name: 'select', label: 'selector', placeholder: 'env=prod' },
  { name: 'canaries', label: 'canaries', placeholder: '1' },
  { name: 'batch', label: 'batch', placeholder: '10%' },
  { name: 'bake', label: 'bake', placeholder: '5m' },
  { name: 'maxFailures', label: 'max failures', placeholder: '0' },
  { name: 'maxRefused', label: 'max refused', placeholder: '50%' },
  { name: 'maxFetchFailures', label: 'max fetch failures', placeholder: '20%' },
  { name: 'window', label: 'windows (;)', placeholder: 'Mon-Fri 02:00-05:00', list: true },
  { name: 'tz', label: 'tz', placeholder: 'UTC' },
];

// The flags of a policy form: only the fields filled in (the rest keep their defaults).
function flagsOf(fields: FormField[], inputs: HTMLInputElement[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  fields.forEach((f, i) => {
    const v = inputs[i]!.value.trim();
    if (!v) return;
    out[f.name] = f.list ? v.split(';').map((x) => x.trim()).filter(Boolean) : v;
  });
  return out;
}

// Preview, then start: the start button is enabled only for the flags the preview showed.
function startForm(ctx: PageContext): HTMLElement {
  const inputs = START_FIELDS.map((f) => h('input', { name: f.name, placeholder: f.placeholder, type: 'text' }));
  const preview = h('div', { class: 'preview', data: { section: 'preview' } });
  const start = h('button', { type: 'button', disabled: true, class: 'primary', data: { action: 'start' } }, 'Start rollout');
  let previewed: string | null = null;
  const flags = () => flagsOf(START_FIELDS, inputs);
  const onEdit = () => {
    if (JSON.stringify(flags()) !== previewed) start.disabled = true;
  };
  for (const i of inputs) i.addEventListener('input', onEdit);
  const doPreview = async () => {
    try {
      const plan = await change<DryRunView>(ctx.session, 'rollout start', { ...flags(), dryRun: true });
      previewed = JSON.stringify(flags());
      replace(preview, dryRunView(plan));
      start.disabled = false;
    } catch (err) {
      replace(preview);
      ctx.fail(err);
    }
  };
  start.addEventListener('click', async () => {
    start.disabled = true;
    try {
      const run = await change<RunView>(ctx.session, 'rollout start', flags());
      location.hash = `#rollout/${encodeURIComponent(run.app)}`;
    } catch (err) {
      ctx.fail(err);
    }
  });
  return h(
    'details',
    { class: 'start' },
    h('summary', {}, 'Start a rollout'),
    h(
      'form',
      {
        class: 'filters',
        onsubmit: (e) => {
          e.preventDefault();
          void doPreview();
        },
      },
      ...START_FIELDS.map((f, i) => h('label', {}, f.label, ' ', inputs[i]!)),
      h('button', { type: 'submit', data: { action: 'preview' } }, 'Preview (dry run)'),
      start,
    ),
    preview,
  );
}

// A dry run as the planner would follow it: targets, the nodes left out and why, the batches in
// order with their times, the budget and the windows.
export function dryRunView(d: DryRunView): HTMLElement {
  const now = Date.now();
  const left = d.nodes.filter((n) => n.batch === null);
  // A node by its hostname, as people know it, its id on hover and in the link.
  const hostOf = (id: string) => d.hostnames?.[id] || id.slice(0, 8);
  const nodeChip = (id: string, cls?: string) => h('a', { href: `#node/${encodeURIComponent(id)}`, ...(cls ? { class: cls } : {}), title: id }, hostOf(id));
  return h(
    'div',
    {},
    h('h3', {}, 'Dry run: ', mono(`${d.run.app} ${d.run.version}`), ' ', state(d.status), ' — nothing was written'),
    table(
      ['targeted', 'not targeted', 'already current', 'batch size', 'max failures', 'refused limit', 'bake', 'windows', 'ends'],
      [[d.counts.targeted, d.counts.notTargeted, d.counts.alreadyCurrent, d.batchSize, d.run.maxFailures, d.refusedLimit, duration(d.run.bakeMs), d.run.windows.length ? `${d.run.windows.join('; ')} (${d.run.tz})` : 'any time', when(d.endsAt, now)]],
      { class: 'narrow' },
    ),
    table(
      ['batch', 'nodes', 'issued', 'not after'],
      d.batches.map((b) => [b.batch === 0 ? 'canary' : `batch ${b.batch}`, h('span', {}, ...b.nodes.map((n) => nodeChip(n, 'chip'))), when(b.at, now), when(b.notAfter, now)]),
      { data: { table: 'plan' } },
    ),
    d.truncated ? h('p', { class: 'muted' }, 'The simulation stopped early; later batches are not shown.') : null,
    left.length ? table(['left out', 'node id', 'state', 'reason'], left.map((n) => [nodeChip(n.nodeId), mono(n.nodeId), state(n.state), mono(n.reason)]), { class: 'narrow', data: { table: 'left-out' } }) : null,
  );
}

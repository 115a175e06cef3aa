// The fleet: a row per node (hostname, labels, heartbeat age, each app's version and supervisor
// state, held, blocked, receipts lost), filtered by a selector (the CLI's syntax) and an app;
// above it, how many nodes run each version.
import { readAll } from '../api.js';
import type { AppReport, NodeView } from '../api-types.js';
import { h, table, type Child } from '../dom.js';
import { duration, exactTime, flag, mono, state } from '../format.js';
import type { Page } from '../page.js';
import { filterForm } from './filter-form.js';

export function fleetPage(params: URLSearchParams): Page {
  const select = params.get('select') ?? '';
  const app = params.get('app') ?? '';
  return {
    title: 'Fleet',
    controls: filterForm('fleet', [
      { name: 'select', label: 'selector', value: select, placeholder: 'env=prod,region in (eu,us)' },
      { name: 'app', label: 'app', value: app, placeholder: 'web' },
    ]),
    async load() {
      const { items, more } = await readAll<NodeView>('nodes', 'nodes', { select });
      const nodes = (app ? items.filter((n) => n.apps.some((a) => a.name === app)) : items).sort((a, b) => a.hostname.localeCompare(b.hostname));
      const apps = app ? [app] : [...new Set(nodes.flatMap((n) => n.apps.map((a) => a.name)))].sort();
      return h(
        'div',
        {},
        versionSummary(nodes, apps),
        h('h2', {}, `Nodes (${nodes.length}${more ? '+, the rest not shown' : ''})`),
        table(
          ['hostname', 'node', 'labels', 'heartbeat', 'clock skew', 'agent', ...apps, 'flags'],
          nodes.map((n) => [
            h('a', { href: `#node/${encodeURIComponent(n.nodeId)}`, class: 'host' }, n.hostname),
            mono(n.nodeId.slice(0, 8), n.nodeId),
            labels(n.labels),
            heartbeat(n),
            skew(n),
            mono(n.agentVersion),
            ...apps.map((name) => appCell(n.apps.find((a) => a.name === name))),
            nodeFlags(n),
          ]),
          { data: { table: 'fleet' } },
        ),
      );
    },
  };
}

export function labels(l: Record<string, string>): Child {
  const entries = Object.entries(l).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return h('span', { class: 'muted' }, '-');
  return h('span', { class: 'labels' }, ...entries.map(([k, v]) => h('span', { class: k.startsWith('claimed.') ? 'label claimed' : 'label' }, `${k}=${v}`)));
}

export function heartbeat(n: NodeView): Child {
  if (n.heartbeatAgeMs === null || n.lastHeartbeatAt === null) return h('span', { class: 'st st-stale' }, 'never');
  return h('time', { title: exactTime(n.lastHeartbeatAt), class: n.stale ? 'st st-stale' : '' }, `${duration(n.heartbeatAgeMs)} ago`);
}

// What the `held` flag says on hover: who holds the app, why and until when, when the agent reports it.
function heldTitle(a: AppReport): string {
  const base = 'an operator on the host holds this app: the control plane changes nothing';
  const h = a.hold;
  return h ? `${base}. Held by ${h.by} since ${exactTime(h.at)}: ${h.reason}; ${h.until === null ? 'until agentctl release-hold' : `until ${exactTime(h.until)}`}` : base;
}

// One app of a node: its version and its supervisor's state.
export function appCell(a: AppReport | undefined): HTMLTableCellElement {
  if (!a) return h('td', { class: 'muted' }, '-');
  return h(
    'td',
    { class: 'app' },
    mono(a.current),
    ' ',
    state(a.supervisor.state, `${a.supervisor.attempts} start attempts${a.previous ? `, previous ${a.previous}` : ''}`),
    a.held ? flag('held', 'warn', heldTitle(a)) : null,
    a.blocked ? flag('blocked', 'bad', 'the helper blocked this app: `agentctl recover` on the host') : null,
    a.watch
      ? flag(
          `watching ${a.watch.restarts}/${a.watch.maxRestarts}`,
          'warn',
          `${a.watch.version} is watched until ${exactTime(a.watch.until)}: ${a.watch.restarts} exits heard, ${a.watch.maxRestarts} allowed before the host rolls it back`,
        )
      : null,
    a.lastExit?.reason ? flag(a.lastExit.reason, 'bad', `its last process ended by ${a.lastExit.reason}${a.restarts ? `; ${a.restarts} restarts since its activation` : ''}`) : null,
  );
}

// Heartbeats more than 5 minutes off are refused (CLOCK_SKEW); past 30 s a node's clock is
// worth a look (windows, receipts' times).
const SKEW_WARN_MS = 30_000;

const signed = (ms: number) => `${ms >= 0 ? '+' : '−'}${duration(Math.abs(ms))}`;

// The node's clock skew: while its heartbeats are refused for it, the skew they carry and since
// when; else its last accepted heartbeat's.
export function skew(n: NodeView): Child {
  const r = n.clockSkewRefused;
  if (r) {
    return h(
      'span',
      { data: { skew: String(r.clockSkewMs), skewRefusedSince: String(r.since) } },
      h('span', { class: 'st st-bad', title: `the node's clock minus the control plane's, as its refused heartbeats carry it (last recorded ${exactTime(r.lastAt)}): ${r.clockSkewMs} ms` }, signed(r.clockSkewMs)),
      ' refused heartbeats since ',
      h('time', { title: exactTime(r.since) }, exactTime(r.since)),
    );
  }
  if (n.clockSkewMs === null || n.clockSkewMs === undefined) return h('span', { class: 'muted' }, '-');
  const s = n.clockSkewMs;
  return h('span', { class: Math.abs(s) > SKEW_WARN_MS ? 'st st-stale' : 'muted', title: `the node's clock minus the control plane's at its last heartbeat: ${s} ms`, data: { skew: String(s) } }, signed(s));
}

function nodeFlags(n: NodeView): Child {
  const out: Child[] = [];
  if (n.receiptLost.length) out.push(flag(`receipt-lost ×${n.receiptLost.length}`, 'bad', `receipt seqs never received: ${n.receiptLost.join(', ')}`));
  if (n.clockSkewRefused) out.push(flag('clock-skew', 'bad', 'its heartbeats are refused: its clock is more than 5 minutes off the control plane\'s (fix it: NTP); rollouts pass it by (CLOCK_SKEW)'));
  if (n.stale) out.push(flag('stale', 'warn', 'no heartbeat within 3 heartbeat intervals: down, unreachable, or refused (a rollout starting now skips it)'));
  if (n.metadataStale) out.push(flag('metadata-stale', 'warn', "its host trusts releases by TUF and its newest timestamp is over 2 hours old, or it has none: it verifies no release until its agent fetches the trust bundle"));
  return out.length ? h('span', {}, ...out) : h('span', { class: 'muted' }, '-');
}

// How many nodes run each version of each app.
function versionSummary(nodes: NodeView[], apps: string[]): Child {
  const rows: Child[][] = [];
  for (const name of apps) {
    const counts = new Map<string, number>();
    for (const n of nodes) {
      const a = n.apps.find((x) => x.name === name);
      if (a) counts.set(a.current ?? '(none)', (counts.get(a.current ?? '(none)') ?? 0) + 1);
    }
    for (const [version, count] of [...counts].sort((x, y) => y[1] - x[1])) rows.push([h('a', { href: `#fleet?app=${encodeURIComponent(name)}` }, name), mono(version), count]);
  }
  return h('div', {}, h('h2', {}, 'Versions'), rows.length ? table(['app', 'version', 'nodes'], rows, { class: 'narrow', data: { table: 'versions' } }) : h('p', { class: 'muted' }, 'No node reports an app yet.'));
}

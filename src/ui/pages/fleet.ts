// The fleet: a row per node (hostname, labels, heartbeat age, trust, each app's version and
// supervisor state, held, blocked, receipts lost), filtered by a selector (the CLI's syntax) and an
// app; above it, how many nodes run each version and how the nodes trust releases.
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
        trustSummary(nodes),
        h('h2', {}, `Nodes (${nodes.length}${more ? '+, the rest not shown' : ''})`),
        table(
          ['hostname', 'node', 'labels', 'heartbeat', 'clock skew', 'trust', 'agent', ...apps, 'flags'],
          nodes.map((n) => [
            h('a', { href: `#node/${encodeURIComponent(n.nodeId)}`, class: 'host' }, n.hostname),
            mono(n.nodeId.slice(0, 8), n.nodeId),
            labels(n.labels),
            heartbeat(n),
            skew(n),
            trust(n),
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

// How the node's host trusts releases (heartbeat v8, docs/design.md §21.2), in the words of the
// CLI's TRUST column (`steward-control nodes`): `keys`, `tuf r<root version>` (`tuf` before it
// reports one), `stale` after it when metadata-stale; null for an agent older than v8. Built from a
// known scheme and a whole root version only, never from the report's own text: the report is the
// host's word, so an unknown scheme is `?` and a version that is not a positive whole number is
// left out, as the CLI does.
export interface TrustWords {
  scheme: 'keys' | 'tuf' | '?';
  root: number | null;
  stale: boolean;
  // `keys`, `tuf r3`, `tuf`, `?`: the scheme and root version, without `stale`.
  word: string;
}

const wholeFrom = (v: unknown, min: number): number | null => (typeof v === 'number' && Number.isSafeInteger(v) && v >= min ? v : null);

export function trustWords(n: Pick<NodeView, 'trust' | 'metadataStale'>): TrustWords | null {
  const t = n.trust as { scheme?: unknown; rootVersion?: unknown } | null | undefined;
  if (!t || typeof t !== 'object') return null;
  const scheme = t.scheme === 'keys' || t.scheme === 'tuf' ? t.scheme : '?';
  const root = scheme === 'tuf' ? wholeFrom(t.rootVersion, 1) : null;
  return { scheme, root, stale: n.metadataStale === true, word: `${scheme}${root === null ? '' : ` r${root}`}` };
}

// What the trust cell says on hover: the scheme in words, the timestamp the host holds and how old
// it was at its report, each number only when it is a whole one.
function trustTitle(n: NodeView, w: TrustWords): string {
  if (w.scheme === 'keys') return 'its host verifies releases by the release keys the control plane sends (the keys scheme)';
  if (w.scheme === '?') return 'its host reports a trust scheme this dashboard does not know';
  const t = n.trust as { timestampVersion?: unknown; timestampAgeSeconds?: unknown };
  const ts = wholeFrom(t.timestampVersion, 1);
  const age = wholeFrom(t.timestampAgeSeconds, 0);
  const parts = [`its host verifies releases by the fleet's TUF repository (the tuf scheme)${w.root === null ? '' : `, root version ${w.root}`}`];
  parts.push(ts === null ? 'it reports no timestamp' : `timestamp version ${ts}${age === null ? '' : `, ${duration(age * 1000)} old at its report`}`);
  if (w.stale) parts.push('metadata-stale: it verifies no release until its agent fetches a fresh trust bundle');
  return parts.join('; ');
}

// The node's trust cell: `keys`, `tuf r3`, `tuf r3 stale` (stale in warning colour), `-`.
export function trust(n: NodeView): Child {
  const w = trustWords(n);
  if (!w) return h('span', { class: 'muted', title: 'no trust report: an agent older than heartbeat v8' }, '-');
  return h('span', { class: 'trust', title: trustTitle(n, w), data: { trust: `${w.word}${w.stale ? ' stale' : ''}` } }, mono(w.word), w.stale ? ' ' : null, w.stale ? h('span', { class: 'st st-metadata-stale' }, 'stale') : null);
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

// How the nodes trust releases: a row per trust word (`tuf r3`, `tuf`, `keys`, `?`, `-` for
// agents before heartbeat v8) with its nodes and how many of them are metadata-stale, newest root
// first; above it, the fleet's tally (on tuf, on keys, not reporting, metadata-stale).
function trustSummary(nodes: NodeView[]): Child {
  if (nodes.length === 0) return null;
  const rows = new Map<string, { rank: number; nodes: number; stale: number }>();
  const tally = { tuf: 0, keys: 0, unknown: 0, none: 0, stale: 0 };
  for (const n of nodes) {
    const w = trustWords(n);
    const word = w ? w.word : '-';
    // tuf by root version, newest first, then tuf with none, keys, an unknown scheme, no report.
    const rank = !w ? -4 : w.scheme === 'tuf' ? (w.root ?? 0) : w.scheme === 'keys' ? -2 : -3;
    const row = rows.get(word) ?? { rank, nodes: 0, stale: 0 };
    row.nodes++;
    if (w?.stale) {
      row.stale++;
      tally.stale++;
    }
    rows.set(word, row);
    if (!w) tally.none++;
    else if (w.scheme === '?') tally.unknown++;
    else tally[w.scheme]++;
  }
  const said = [`${tally.tuf} on tuf`, `${tally.keys} on keys`, tally.unknown ? `${tally.unknown} on an unknown scheme` : '', tally.none ? `${tally.none} not reporting (agents before heartbeat v8)` : ''].filter(Boolean).join(', ');
  return h(
    'div',
    { data: { section: 'trust' } },
    h('h2', {}, 'Trust'),
    h('p', { data: { section: 'trust-tally' } }, `${said}; ${tally.stale} metadata-stale`),
    table(
      ['trust', 'nodes', 'metadata-stale'],
      [...rows]
        .sort((a, b) => b[1].rank - a[1].rank)
        .map(([word, r]) => [word === '-' ? h('span', { class: 'muted', title: 'no trust report: an agent older than heartbeat v8' }, '-') : mono(word), r.nodes, r.stale ? h('span', { class: 'st st-metadata-stale' }, String(r.stale)) : r.stale]),
      { class: 'narrow', data: { table: 'trust' } },
    ),
  );
}

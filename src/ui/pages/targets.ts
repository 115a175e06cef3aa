// Targets (docs/design.md §18): every target with how many nodes are behind and why, and a page per
// target with each node it selects, its version and its one reason for being behind. Every
// string from the store or a node goes in as text.
import { read } from '../api.js';
import type { TargetSummary, TargetView } from '../api-types.js';
import { h, table, type Child } from '../dom.js';
import { mono, state, when } from '../format.js';
import type { Page } from '../page.js';

// The reasons with nodes behind for them, as coloured chips with their counts.
function behindChips(t: TargetSummary): Child {
  const rows = Object.entries(t.behind).filter(([, n]) => n > 0);
  if (rows.length === 0) return h('span', { class: 'muted' }, '-');
  return h('span', { data: { section: 'behind' } }, ...rows.map(([r, n]) => h('span', { class: 'chip', data: { reason: r } }, state(r), ` ${n}`)));
}

const link = (name: string) => h('a', { href: `#target/${encodeURIComponent(name)}` }, mono(name));

export function targetsPage(): Page {
  return {
    title: 'Targets',
    async load() {
      const { targets } = await read<{ targets: TargetSummary[] }>('target list');
      if (targets.length === 0) return h('p', { class: 'muted' }, 'No target yet: `steward-control target set NAME --app APP --version V --select SEL`.');
      const now = Date.now();
      return table(
        ['target', 'app', 'version', 'status', 'priority', 'selector', 'current / selected', 'behind, by reason', 'run', 'set'],
        targets.map((t) => [link(t.name), mono(t.app), mono(t.version), state(t.status), t.priority, mono(t.selector || '(all)'), `${t.counts.current} / ${t.counts.selected}`, behindChips(t), t.run ? `#${t.run.id} (${t.run.status})` : '-', when(t.setAt, now)]),
        { data: { table: 'targets' } },
      );
    },
  };
}

// A reason's details: who and until when, the code, the message.
function details(r: NonNullable<TargetView['nodes'][number]['reason']>, now: number): Child {
  return h('span', {}, r.message, r.by ? h('span', { class: 'muted' }, ` by ${r.by}`) : null, r.until !== null ? h('span', { class: 'muted' }, ' until ', when(r.until, now)) : null, r.code ? h('span', {}, ' ', mono(r.code)) : null);
}

export function targetPage(name: string): Page {
  return {
    title: `Target ${name}`,
    async load() {
      const t = await read<TargetView>('target status', { name });
      const now = Date.now();
      return h(
        'div',
        {},
        table(
          ['app', 'version', 'status', 'priority', 'selector', 'run', 'set', 'current / selected', 'behind, by reason'],
          [[mono(t.app), mono(t.version), state(t.status), t.priority, mono(t.selector || '(all)'), t.run ? `#${t.run.id} ${t.run.version} (${t.run.status})` : '-', h('span', {}, when(t.setAt, now), t.setBy ? ` by ${t.setBy}` : ''), `${t.counts.current} / ${t.counts.selected}`, behindChips(t)]],
          { class: 'narrow', data: { table: 'target' } },
        ),
        t.halted ? h('p', { class: 'banner bad' }, `Halted by rollout #${t.halted.runId}: `, mono(t.halted.code), ` ${t.halted.message}`) : null,
        t.nodes.length === 0
          ? h('p', { class: 'muted' }, 'The selector matches no enrolled node now; the target waits for nodes.')
          : table(
              ['node', 'host', 'version', 'state', 'reason', 'since', 'details'],
              t.nodes.map((n) => [
                h('a', { href: `#node/${encodeURIComponent(n.nodeId)}` }, mono(n.nodeId)),
                n.hostname,
                mono(n.version),
                state(n.state),
                n.reason ? state(n.reason.reason) : '-',
                n.reason ? when(n.reason.since, now) : '-',
                n.reason ? details(n.reason, now) : '-',
              ]),
              { data: { table: 'target-nodes' } },
            ),
      );
    },
  };
}

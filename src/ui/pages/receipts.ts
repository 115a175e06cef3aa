// Receipts: every signed verdict the control plane verified, newest first, filtered by node,
// app and selector.
import { readAll } from '../api.js';
import type { ReceiptView } from '../api-types.js';
import { h, table, type Child } from '../dom.js';
import { mono, state, when } from '../format.js';
import type { Page } from '../page.js';
import { filterForm } from './filter-form.js';

export function receiptsPage(params: URLSearchParams): Page {
  const query = { node: params.get('node') ?? '', app: params.get('app') ?? '', select: params.get('select') ?? '' };
  return {
    title: 'Receipts',
    controls: filterForm('receipts', [
      { name: 'node', label: 'node', value: query.node },
      { name: 'app', label: 'app', value: query.app },
      { name: 'select', label: 'selector', value: query.select, placeholder: 'env=prod' },
    ]),
    async load() {
      const { items, more } = await readAll<ReceiptView>('receipts', 'receipts', query);
      const newest = items.reverse();
      return h(
        'div',
        {},
        h('h2', {}, `Receipts (${newest.length}${more ? ', the oldest not shown' : ''})`),
        table(['received', 'app', 'seq', 'outcome', 'from → to', 'reason', 'attempt', 'run', 'node'], receiptRows(newest, Date.now(), true), { data: { table: 'receipts' } }),
      );
    },
  };
}

// A row per receipt; `withNode` adds the node column.
export function receiptRows(receipts: ReceiptView[], now: number, withNode: boolean): Child[][] {
  return receipts.map((r) => [
    when(r.receivedAt, now),
    mono(r.app),
    r.seq,
    state(r.outcome),
    h('span', {}, mono(r.fromVersion), ' → ', mono(r.targetVersion)),
    h('span', { class: 'reason' }, mono(r.reasonCode), r.reasonMessage ? ' ' : '', r.reasonMessage ?? ''),
    mono(r.attemptId),
    r.runId === null ? h('span', { class: 'muted' }, '-') : h('a', { href: `#rollout/${encodeURIComponent(r.app)}` }, `#${r.runId}`),
    ...(withNode ? [h('a', { href: `#node/${encodeURIComponent(r.nodeId)}` }, mono(r.nodeId.slice(0, 8), r.nodeId))] : []),
  ]);
}

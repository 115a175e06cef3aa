// A run's progress bar, canary to batches: a segment per batch (the canaries first), a cell per
// node in its state's colour, and the nodes not issued yet at the end.
import type { RunNode } from '../api-types.js';
import { h } from '../dom.js';

export function progressBar(nodes: RunNode[]): HTMLElement {
  const issuable = nodes.filter((n) => n.state !== 'not-targeted' && n.state !== 'already-current' && n.state !== 'skipped');
  const batches = new Map<number | null, RunNode[]>();
  for (const n of issuable) batches.set(n.batch, [...(batches.get(n.batch) ?? []), n]);
  const order = [...batches.keys()].sort((a, b) => (a === null ? 1 : b === null ? -1 : a - b));
  const total = Math.max(1, issuable.length);
  const done = issuable.filter((n) => n.state === 'confirmed').length;
  return h(
    'div',
    { class: 'progress', data: { confirmed: String(done), total: String(issuable.length) } },
    h(
      'div',
      { class: 'bar' },
      ...order.map((b) => {
        const members = batches.get(b) ?? [];
        return h(
          'div',
          { class: `segment ${b === null ? 'unissued' : ''}`, style: { width: `${(100 * members.length) / total}%` } },
          h('div', { class: 'cells' }, ...members.map((n) => h('span', { class: `cell st-${n.state}`, title: `${n.nodeId}: ${n.state}${n.reason ? ` (${n.reason})` : ''}` }))),
          h('div', { class: 'segment-label' }, b === null ? `not issued ${members.length}` : b === 0 ? `canary ${members.length}` : `batch ${b}: ${members.length}`),
        );
      }),
    ),
    h('div', { class: 'bar-summary' }, `${done} of ${issuable.length} confirmed`),
  );
}

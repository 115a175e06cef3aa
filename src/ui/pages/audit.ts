// The audit log: every change, login and denial, newest first.
import { readAll } from '../api.js';
import type { AuditRow } from '../api-types.js';
import { h, table } from '../dom.js';
import { mono, when } from '../format.js';
import type { Page } from '../page.js';
import { filterForm } from './filter-form.js';

export function auditPage(params: URLSearchParams): Page {
  const since = params.get('since') ?? '24h';
  return {
    title: 'Audit',
    controls: filterForm('audit', [{ name: 'since', label: 'since', value: since, placeholder: '24h' }]),
    async load() {
      const { items, more } = await readAll<AuditRow>('audit', 'entries', { since });
      const now = Date.now();
      return h(
        'div',
        {},
        h('h2', {}, `Audit (${items.length}${more ? ', the newest not shown' : ''}, since ${since})`),
        table(
          ['at', 'operator', 'action', 'target', 'source', 'details'],
          items.reverse().map((e) => [when(e.at, now), e.operator ?? h('span', { class: 'muted' }, '(nobody)'), h('span', { class: e.action === 'denied' || e.action === 'auth.failed' ? 'st st-bad' : '' }, e.action), mono(e.target), mono(e.source ?? 'local'), h('code', { class: 'details' }, JSON.stringify(e.details))]),
          { data: { table: 'audit' } },
        ),
      );
    },
  };
}

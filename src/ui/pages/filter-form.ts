// A filter box above a table: its fields go in the page's address (`#fleet?select=...`), so a
// filtered view can be bookmarked and survives a reload.
import { h } from '../dom.js';

export interface Field {
  name: string;
  label: string;
  value: string;
  placeholder?: string;
}

export function filterForm(page: string, fields: Field[]): HTMLFormElement {
  const inputs = fields.map((f) => h('input', { name: f.name, value: f.value, placeholder: f.placeholder ?? '', type: 'text' }));
  return h(
    'form',
    {
      class: 'filters',
      onsubmit: (e) => {
        e.preventDefault();
        const q = new URLSearchParams();
        for (const i of inputs) if (i.value.trim()) q.set(i.name, i.value.trim());
        const qs = q.toString();
        location.hash = `#${page}${qs ? `?${qs}` : ''}`;
      },
    },
    ...fields.map((f, i) => h('label', {}, f.label, ' ', inputs[i]!)),
    h('button', { type: 'submit' }, 'Filter'),
  );
}

// The one way the dashboard makes its DOM (docs/design.md §12): elements by createElement and text by
// textContent, so a string from a node (a hostname, a version, a receipt's reason, a log line)
// is only ever text, never markup. Attributes are set one by one; no event-handler attribute
// and no link out of this page can be made here.
export type Child = Node | string | number | null | undefined | false;

export interface Props {
  class?: string;
  title?: string;
  // A place in the dashboard: `#fleet`, `#node/<id>`.
  href?: `#${string}`;
  id?: string;
  type?: string;
  name?: string;
  value?: string;
  placeholder?: string;
  disabled?: boolean;
  // A test or a style hooks on these (data-<key>).
  data?: Record<string, string>;
  style?: { width?: string };
  onclick?: (e: MouseEvent) => void;
  onsubmit?: (e: SubmitEvent) => void;
  oninput?: (e: Event) => void;
}

// An element with its props and children; strings and numbers become text nodes.
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (props.class) e.className = props.class;
  if (props.title !== undefined) e.title = props.title;
  if (props.href !== undefined) e.setAttribute('href', props.href);
  if (props.id !== undefined) e.id = props.id;
  if (props.type !== undefined) e.setAttribute('type', props.type);
  if (props.name !== undefined) e.setAttribute('name', props.name);
  if (props.value !== undefined) (e as HTMLInputElement).value = props.value;
  if (props.placeholder !== undefined) e.setAttribute('placeholder', props.placeholder);
  if (props.disabled) e.setAttribute('disabled', '');
  for (const [k, v] of Object.entries(props.data ?? {})) e.dataset[k] = v;
  // A CSSOM property, not a style attribute: the CSP allows no inline style.
  if (props.style?.width !== undefined) e.style.width = props.style.width;
  const target: HTMLElement = e;
  if (props.onclick) target.addEventListener('click', props.onclick);
  if (props.onsubmit) target.addEventListener('submit', props.onsubmit);
  if (props.oninput) target.addEventListener('input', props.oninput);
  append(e, children);
  return e;
}

// Appends children: nodes as they are, strings and numbers as text.
export function append(parent: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

// Replaces every child of `parent`.
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, children);
}

// A table with a header row and body rows of cells.
export function table(head: string[], rows: Child[][], props: Props = {}): HTMLTableElement {
  return h(
    'table',
    { ...props, class: `grid ${props.class ?? ''}`.trim() },
    h('thead', {}, h('tr', {}, ...head.map((c) => h('th', {}, c)))),
    h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c) => (c instanceof HTMLTableCellElement ? c : h('td', {}, c)))))),
  );
}

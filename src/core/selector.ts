// Label selectors (docs/design.md §11), Kubernetes' syntax: comma-separated terms that must all hold:
// `k=v` (or `k==v`), `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`. As in Kubernetes, `!=`
// and `notin` also hold for a node without the key. The empty selector holds for every node.
// A bad selector is a USAGE error (exit 2).
import { escapeControlChars, PLAIN_TEXT_RE } from './control-chars.js';
import { StewardError } from './errors.js';
import { LABEL_KEY_RE, LABEL_VALUE_RE, type Labels } from './labels.js';

export type SelectorTerm =
  | { op: 'eq' | 'ne'; key: string; value: string }
  | { op: 'in' | 'notin'; key: string; values: string[] }
  | { op: 'exists' | 'absent'; key: string };

export interface Selector {
  // The text as given (trimmed), for the run's record and messages.
  text: string;
  terms: SelectorTerm[];
}

// The selector as an error message shows it: quoted, its control characters escaped (JSON's
// quoting leaves U+2028, C1 controls and bidi overrides as they are, issue 31 item 16).
const quoted = (text: string) => `"${escapeControlChars(text.replace(/\\/g, '\\\\').replace(/"/g, '\\"'))}"`;
const bad = (text: string, why: string) => new StewardError('USAGE', `selector ${quoted(text)}: ${why} (terms like env=prod, tier!=db, region in (eu,us), canary, !legacy)`);

// Splits at the commas that are not inside parentheses.
function splitTerms(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      out.push(text.slice(start, i));
      start = i + 1;
    }
    if (depth < 0 || depth > 1) throw bad(text, 'unbalanced parentheses');
  }
  if (depth !== 0) throw bad(text, 'unbalanced parentheses');
  out.push(text.slice(start));
  return out.map((t) => t.trim());
}

function key(text: string, k: string): string {
  if (!LABEL_KEY_RE.test(k)) throw bad(text, `${quoted(k)} is not a label key`);
  return k;
}

function value(text: string, v: string): string {
  if (!LABEL_VALUE_RE.test(v)) throw bad(text, `${quoted(v)} is not a label value`);
  return v;
}

function parseTerm(text: string, t: string): SelectorTerm {
  if (t === '') throw bad(text, 'an empty term');
  let m = /^(\S+?)\s+(in|notin)\s*\((.*)\)$/.exec(t);
  if (m) {
    if ((m[3] as string).trim() === '') throw bad(text, 'an empty set');
    const values = (m[3] as string).split(',').map((v) => value(text, v.trim()));
    return { op: m[2] as 'in' | 'notin', key: key(text, m[1] as string), values };
  }
  m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(t);
  if (m) return { op: m[2] === '!=' ? 'ne' : 'eq', key: key(text, m[1] as string), value: value(text, m[3] as string) };
  m = /^!\s*(\S+)$/.exec(t);
  if (m) return { op: 'absent', key: key(text, m[1] as string) };
  if (/^\S+$/.test(t)) return { op: 'exists', key: key(text, t) };
  throw bad(text, `${quoted(t)} is not a term`);
}

// Parses a selector; the empty string (or only spaces) selects every node.
// A control character anywhere (a newline, a vertical tab, U+2028, a bidi override: what
// control-chars.ts names, tab too) is refused, before the trim that would drop one at either end:
// whitespace between terms is the space.
export function parseSelector(text: string): Selector {
  if (!PLAIN_TEXT_RE.test(text)) throw bad(text.length > 200 ? text.slice(0, 200) + '...' : text, 'a control character is not allowed in a selector');
  const trimmed = text.trim();
  if (trimmed === '') return { text: '', terms: [] };
  if (trimmed.length > 4096) throw bad(trimmed.slice(0, 40) + '...', 'longer than 4096 characters');
  return { text: trimmed, terms: splitTerms(trimmed).map((t) => parseTerm(trimmed, t)) };
}

// Whether every term holds for `labels`.
export function matchesSelector(sel: Selector, labels: Labels): boolean {
  for (const t of sel.terms) {
    const has = Object.hasOwn(labels, t.key);
    const v = has ? labels[t.key] : undefined;
    switch (t.op) {
      case 'eq':
        if (v !== t.value) return false;
        break;
      case 'ne':
        if (v === t.value) return false;
        break;
      case 'in':
        if (!has || !t.values.includes(v as string)) return false;
        break;
      case 'notin':
        if (has && t.values.includes(v as string)) return false;
        break;
      case 'exists':
        if (!has) return false;
        break;
      case 'absent':
        if (has) return false;
        break;
    }
  }
  return true;
}

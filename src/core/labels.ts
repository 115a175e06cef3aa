// Node labels (docs/design.md §11): up to 32 per node, keys `^[a-z][a-z0-9._/-]{0,62}$`, values
// `^[A-Za-z0-9._-]{0,63}$`. Labels that target come from operators (an enrollment token's, or
// `nodes label`); what a node proposes at enrollment is kept under `claimed.<key>`, which a
// selector reads only when it names that `claimed.` key itself.
import { StewardError } from './errors.js';

export type Labels = Record<string, string>;

export const LABEL_KEY_RE = /^[a-z][a-z0-9._/-]{0,62}$/;
// A key a node may propose at enrollment: short enough to stay a key under `claimed.`.
export const CLAIMABLE_KEY_RE = /^[a-z][a-z0-9._/-]{0,54}$/;
export const LABEL_VALUE_RE = /^[A-Za-z0-9._-]{0,63}$/;
export const MAX_LABELS = 32;
export const CLAIMED_PREFIX = 'claimed.';

// "k=v" as a label; a bad one is a USAGE error naming `what` (the flag or argument).
export function parseLabel(text: string, what: string): [string, string] {
  const eq = text.indexOf('=');
  const key = eq < 0 ? text : text.slice(0, eq);
  const value = eq < 0 ? null : text.slice(eq + 1);
  if (value === null || !LABEL_KEY_RE.test(key) || !LABEL_VALUE_RE.test(value)) {
    throw new StewardError('USAGE', `${what} ${JSON.stringify(text)} is not a label k=v (keys ${LABEL_KEY_RE.source}, values ${LABEL_VALUE_RE.source})`);
  }
  return [key, value];
}

// Labels from repeated "k=v" flags; a key given twice, or more than 32, is a USAGE error.
export function parseLabels(texts: readonly string[], what: string): Labels {
  const out: Labels = {};
  for (const t of texts) {
    const [k, v] = parseLabel(t, what);
    if (Object.hasOwn(out, k)) throw new StewardError('USAGE', `${what}: label ${k} is given twice`);
    out[k] = v;
  }
  if (Object.keys(out).length > MAX_LABELS) throw new StewardError('USAGE', `${what}: at most ${MAX_LABELS} labels`);
  return out;
}

// An operator's label change for `nodes label`: "k=v" sets, "k-" removes.
export type LabelChange = { key: string; value: string } | { key: string; remove: true };

export function parseLabelChange(text: string): LabelChange {
  if (text.endsWith('-') && !text.includes('=')) {
    const key = text.slice(0, -1);
    if (!LABEL_KEY_RE.test(key)) throw new StewardError('USAGE', `${JSON.stringify(text)} is not a label removal k- (keys ${LABEL_KEY_RE.source})`);
    return { key, remove: true };
  }
  const [key, value] = parseLabel(text, 'label');
  if (key.startsWith(CLAIMED_PREFIX)) throw new StewardError('USAGE', `${key}: claimed.* labels are what a node proposed at enrollment; an operator sets plain keys`);
  return { key, value };
}

// A node's labels after `changes`, in order; more than 32 is a USAGE error.
export function applyLabelChanges(labels: Labels, changes: readonly LabelChange[], nodeId: string): Labels {
  const out: Labels = { ...labels };
  for (const c of changes) {
    if ('remove' in c) delete out[c.key];
    else out[c.key] = c.value;
  }
  if (Object.keys(out).length > MAX_LABELS) throw new StewardError('USAGE', `node ${nodeId} would have ${Object.keys(out).length} labels; at most ${MAX_LABELS}`);
  return sortedLabels(out);
}

// What a node starts with: its token's labels, and its own proposals under claimed.<key>.
// Null when the two together are more than 32.
export function enrollmentLabels(token: Labels, claimed: Labels): Labels | null {
  const out: Labels = { ...token };
  for (const [k, v] of Object.entries(claimed)) out[CLAIMED_PREFIX + k] = v;
  return Object.keys(out).length > MAX_LABELS ? null : sortedLabels(out);
}

// Labels with their keys in code-point order (for stable output).
export function sortedLabels(labels: Labels): Labels {
  return Object.fromEntries(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

// "k=v,k2=v2" for a person.
export function formatLabels(labels: Labels): string {
  const e = Object.entries(labels);
  return e.length ? e.map(([k, v]) => `${k}=${v}`).join(',') : '-';
}

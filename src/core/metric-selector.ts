// A release's `metrics.requests` and `metrics.errors` (docs/design.md §19, docs/app-contract.md):
// a Prometheus metric name with an optional label matcher, `http_requests_total{code=~"5.."}`,
// parsed strictly and bounded, pure. The agent sums the series that match (src/agent/metrics/).

export type LabelOp = '=' | '!=' | '=~' | '!~';

export interface LabelMatcher {
  label: string;
  op: LabelOp;
  value: string;
  // `=~` and `!~`: the value anchored as PromQL anchors it, `^(?:value)$`.
  re?: RegExp;
}

export interface MetricSelector {
  name: string;
  matchers: LabelMatcher[];
}

export const METRIC_NAME_RE = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
export const LABEL_NAME_RE = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
export const MAX_SELECTOR_LENGTH = 512;
export const MAX_MATCHERS = 8;
export const MAX_MATCHER_VALUE_LENGTH = 256;
// The longest label value a regex is run against: a longer one does not match (`=~`) or matches
// (`!~`) nothing that the app meant, and a regex over a megabyte of hostile text is a denial of
// service (docs/design.md §19: hostile label values are ignored).
export const MAX_REGEX_SUBJECT_LENGTH = 1024;

// Parses `name` or `name{label OP "value", ...}`; throws an Error whose message says what is wrong.
export function parseMetricSelector(text: string): MetricSelector {
  if (text.length > MAX_SELECTOR_LENGTH) throw new Error(`a metric selector is at most ${MAX_SELECTOR_LENGTH} characters`);
  const brace = text.indexOf('{');
  const name = brace === -1 ? text : text.slice(0, brace);
  if (!METRIC_NAME_RE.test(name)) throw new Error(`"${name.slice(0, 64)}" is not a Prometheus metric name`);
  if (brace === -1) return { name, matchers: [] };
  if (!text.endsWith('}')) throw new Error('a label matcher ends with "}"');
  const body = text.slice(brace + 1, -1);
  const matchers: LabelMatcher[] = [];
  let i = 0;
  const skipSpace = () => {
    while (body[i] === ' ') i++;
  };
  skipSpace();
  while (i < body.length) {
    const m = /^([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"/.exec(body.slice(i));
    if (!m) throw new Error(`expected label OP "value" at "${body.slice(i, i + 32)}"`);
    i += m[0].length;
    let value = '';
    for (;;) {
      const c = body[i];
      if (c === undefined) throw new Error('a label value has no closing quote');
      i++;
      if (c === '"') break;
      if (c === '\\') {
        const e = body[i++];
        if (e === 'n') value += '\n';
        else if (e === '\\' || e === '"') value += e;
        else throw new Error('a label value escapes only \\\\, \\" and \\n');
      } else value += c;
    }
    if (value.length > MAX_MATCHER_VALUE_LENGTH) throw new Error(`a matcher's value is at most ${MAX_MATCHER_VALUE_LENGTH} characters`);
    const op = m[2] as LabelOp;
    matchers.push({ label: m[1] as string, op, value, ...(op === '=~' || op === '!~' ? { re: compileMatcherRegex(value) } : {}) });
    if (matchers.length > MAX_MATCHERS) throw new Error(`a selector has at most ${MAX_MATCHERS} label matchers`);
    skipSpace();
    if (body[i] === ',') {
      i++;
      skipSpace();
      if (i >= body.length) break; // a trailing comma, as PromQL allows
      continue;
    }
    if (i < body.length) throw new Error(`expected "," or "}" at "${body.slice(i, i + 32)}"`);
  }
  return { name, matchers };
}

// The regex of a matcher, anchored. Refused: backreferences and lookarounds (not RE2, which PromQL
// uses), and a quantified group that holds a quantifier (`(a+)+`, the shape of catastrophic
// backtracking); the rest is bounded by MAX_REGEX_SUBJECT_LENGTH.
function compileMatcherRegex(value: string): RegExp {
  if (/\\[1-9k]|\(\?[=!<]/.test(value)) throw new Error('a regex matcher takes no backreference or lookaround (PromQL regexes are RE2)');
  if (/\([^()]*[*+}][^()]*\)[*+{]/.test(value)) throw new Error('a regex matcher takes no quantified group holding a quantifier (catastrophic backtracking)');
  try {
    return new RegExp(`^(?:${value})$`, 'u');
  } catch (err) {
    throw new Error(`"${value.slice(0, 64)}" is not a regular expression: ${(err as Error).message}`);
  }
}

// Whether a series' labels satisfy every matcher (a label the series lacks reads as "", as in PromQL).
export function matchesSelector(sel: MetricSelector, name: string, labels: ReadonlyMap<string, string>): boolean {
  if (name !== sel.name) return false;
  for (const m of sel.matchers) {
    const v = labels.get(m.label) ?? '';
    switch (m.op) {
      case '=':
        if (v !== m.value) return false;
        break;
      case '!=':
        if (v === m.value) return false;
        break;
      case '=~':
        if (v.length > MAX_REGEX_SUBJECT_LENGTH || !(m.re as RegExp).test(v)) return false;
        break;
      case '!~':
        if (v.length > MAX_REGEX_SUBJECT_LENGTH || (m.re as RegExp).test(v)) return false;
        break;
    }
  }
  return true;
}

// Whether `text` parses as a selector (for schemas).
export function isMetricSelector(text: string): boolean {
  try {
    parseMetricSelector(text);
    return true;
  } catch {
    return false;
  }
}

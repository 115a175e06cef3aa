// A strict reader of the Prometheus text exposition format 0.0.4 (docs/design.md §19), pure: it sums
// the samples that match each selector and reads nothing else. Why steward's own: npm has no parser
// made for untrusted input and kept up (parse-prometheus-text-format is unmaintained, its users
// say so in prometheus/client_js#497; prom-client writes the format and parses none), and the few
// dozen lines needed here bound every length, which a general parser building a whole object tree
// does not. Strict as Prometheus' own scrape is: a malformed line fails the whole body (a raw
// newline inside a label value cannot smuggle in a sample). A series with a label value longer than
// MAX_LABEL_VALUE_LENGTH, or a NaN, negative or infinite value, is ignored, not summed.
import { matchesSelector, METRIC_NAME_RE, type MetricSelector } from '../../core/metric-selector.js';

export const MAX_LABEL_VALUE_LENGTH = 4096;
export const MAX_LABELS_PER_SERIES = 64;

export class PromTextError extends Error {}

export interface SumResult {
  // Per selector: the sum of the series that match; null when no sample or metadata names its metric.
  sums: (number | null)[];
  ignored: number;
}

const LABEL_NAME_AT = /[a-zA-Z_][a-zA-Z0-9_]*/y;
const METRIC_NAME_AT = /[a-zA-Z_:][a-zA-Z0-9_:]*/y;

// Sums the samples of `body` that match each selector; throws PromTextError naming the first bad line.
export function sumMatching(body: string, selectors: readonly MetricSelector[]): SumResult {
  const sums: (number | null)[] = selectors.map(() => null);
  const wanted = new Set(selectors.map((s) => s.name));
  let ignored = 0;
  let lineNo = 0;
  let start = 0;
  while (start <= body.length) {
    let end = body.indexOf('\n', start);
    if (end === -1) end = body.length;
    const line = body.slice(start, end);
    start = end + 1;
    lineNo++;
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      // `# HELP name ...` and `# TYPE name ...` say the metric exists even with no series yet.
      const m = /^#\s+(?:HELP|TYPE)\s+(\S+)/.exec(line);
      if (m && wanted.has(m[1] as string)) selectors.forEach((s, i) => s.name === m[1] && sums[i] === null && (sums[i] = 0));
      continue;
    }
    const sample = parseSampleLine(line, lineNo);
    if (!wanted.has(sample.name)) continue;
    selectors.forEach((s, i) => {
      if (s.name === sample.name && sums[i] === null) sums[i] = 0;
    });
    if (sample.tooLong || !Number.isFinite(sample.value) || sample.value < 0) {
      ignored++;
      continue;
    }
    selectors.forEach((s, i) => {
      if (matchesSelector(s, sample.name, sample.labels)) sums[i] = (sums[i] ?? 0) + sample.value;
    });
  }
  return { sums, ignored };
}

interface Sample {
  name: string;
  labels: Map<string, string>;
  value: number;
  tooLong: boolean;
}

function parseSampleLine(line: string, lineNo: number): Sample {
  const fail = (why: string): never => {
    throw new PromTextError(`line ${lineNo}: ${why}`);
  };
  METRIC_NAME_AT.lastIndex = 0;
  const nm = METRIC_NAME_AT.exec(line);
  if (!nm) fail('expected a metric name');
  const name = (nm as RegExpExecArray)[0];
  let i = name.length;
  const labels = new Map<string, string>();
  let tooLong = false;
  if (line[i] === '{') {
    i++;
    for (;;) {
      while (line[i] === ' ') i++;
      if (line[i] === '}') {
        i++;
        break;
      }
      LABEL_NAME_AT.lastIndex = i;
      const ln = LABEL_NAME_AT.exec(line);
      if (!ln) fail('expected a label name');
      const label = (ln as RegExpExecArray)[0];
      i += label.length;
      while (line[i] === ' ') i++;
      if (line[i] !== '=') fail(`expected "=" after label ${label.slice(0, 64)}`);
      i++;
      while (line[i] === ' ') i++;
      if (line[i] !== '"') fail('expected a quoted label value');
      i++;
      let value = '';
      for (;;) {
        const c = line[i];
        if (c === undefined) fail('a label value has no closing quote');
        i++;
        if (c === '"') break;
        if (c === '\\') {
          const e = line[i++];
          if (e === 'n') value += '\n';
          else if (e === '\\' || e === '"') value += e;
          else fail('a label value escapes only \\\\, \\" and \\n');
        } else if (value.length <= MAX_LABEL_VALUE_LENGTH) value += c;
      }
      if (value.length > MAX_LABEL_VALUE_LENGTH) tooLong = true;
      if (labels.has(label)) fail(`label ${label.slice(0, 64)} appears twice`);
      labels.set(label, value);
      if (labels.size > MAX_LABELS_PER_SERIES) fail(`more than ${MAX_LABELS_PER_SERIES} labels`);
      while (line[i] === ' ') i++;
      if (line[i] === ',') i++;
      else if (line[i] !== '}') fail('expected "," or "}"');
    }
  }
  const rest = line.slice(i);
  const m = /^[ \t]+(\S+)(?:[ \t]+(-?\d{1,19}))?[ \t]*$/.exec(rest);
  if (!m) fail('expected a value (and an optional timestamp) after the series');
  const value = parseValue((m as RegExpExecArray)[1] as string);
  if (value === null) fail('the value is not a number');
  if (!METRIC_NAME_RE.test(name)) fail('bad metric name');
  return { name, labels, value: value as number, tooLong };
}

// A Go ParseFloat-style value: decimal or exponent notation, NaN, +Inf, -Inf.
function parseValue(text: string): number | null {
  if (text === 'NaN') return NaN;
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return null;
  return Number(text);
}

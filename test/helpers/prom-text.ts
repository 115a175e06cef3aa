// Prometheus' text format for tests: `promtool check metrics` (Debian's `prometheus` package) on
// a text, and the samples of a text read back by name and labels.
import { spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';
import { skipUnlessCI } from './skip.js';

// promtool's verdict on `text`, or null (the test skipped, with the reason printed) when promtool
// is not installed here. `ok` is its exit status 0; `output` what it printed.
export function promtoolCheck(t: Pick<TestContext, 'skip'>, text: string): { ok: boolean; output: string } | null {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
    skipUnlessCI(t, 'promtool is not installed (apt-get install prometheus)');
    return null;
  }
  if (r.error) throw r.error;
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}

// Fails unless promtool passes `text` (skips, as promtoolCheck, without promtool).
export function assertPromtoolPasses(t: Pick<TestContext, 'skip'>, text: string): void {
  const verdict = promtoolCheck(t, text);
  if (verdict && !verdict.ok) throw new Error(`promtool check metrics refused the text: ${verdict.output}`);
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

// Every sample of a text in the exposition format.
export function samplesOf(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

// The value of the one sample of `name` whose labels include `labels`, or undefined when none.
export function valueOf(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const hits = samplesOf(text).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (hits.length > 1) throw new Error(`${hits.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return hits[0]?.value;
}

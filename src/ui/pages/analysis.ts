// A run's automated analysis on its page (docs/design.md §19): the mode, window and thresholds, the
// step the run waits for and when its window ends, and each step's judgement: its verdict and what
// it did (or would have done, in observe), and per signal both cohorts' figures beside a small chart
// of the signal per cohort over the window (inline SVG made through the DOM, no markup from the
// server: every string goes in as text).
import type { AnalysisStep, AnalysisView, RunView } from '../api-types.js';
import { h, table, type Child } from '../dom.js';
import { duration, mono, state, when } from '../format.js';

const SVG = 'http://www.w3.org/2000/svg';
const W = 180;
const H = 40;
const SIGNALS = ['restart-rate', 'liveness-failures', 'error-ratio'] as const;

const stepName = (step: number) => (step === 0 ? 'canaries' : `batch ${step}`);
const figure = (signal: string, v: number | null) => (v === null ? 'no data' : signal === 'error-ratio' ? `${(v * 100).toFixed(v < 0.001 && v > 0 ? 3 : 2)} %` : `${v.toFixed(2)}/h`);

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string>, ...children: SVGElement[]): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.appendChild(c);
  return e;
}

// A small chart of one signal: the canary cohort's line over the baseline's, a point a minute.
export function signalChart(signal: string, series: { canary: Array<number | null>; baseline: Array<number | null> }): SVGSVGElement {
  const all = [...series.canary, ...series.baseline].filter((v): v is number => v !== null && Number.isFinite(v));
  const top = Math.max(...all, signal === 'error-ratio' ? 0.001 : 0.1);
  const n = Math.max(series.canary.length, series.baseline.length, 2);
  const x = (i: number) => ((i / (n - 1)) * (W - 4) + 2).toFixed(1);
  const y = (v: number) => (H - 2 - (Math.max(0, v) / top) * (H - 4)).toFixed(1);
  // A line per run of minutes with data (a minute without breaks it).
  const lines = (points: Array<number | null>, cls: string) => {
    const out: SVGElement[] = [];
    let run: string[] = [];
    const flush = () => {
      if (run.length === 1) out.push(svg('circle', { cx: run[0]!.split(',')[0]!, cy: run[0]!.split(',')[1]!, r: '1.5', class: cls }));
      else if (run.length > 1) out.push(svg('polyline', { points: run.join(' '), class: cls, fill: 'none' }));
      run = [];
    };
    points.forEach((v, i) => (v === null || !Number.isFinite(v) ? flush() : run.push(`${x(i)},${y(v)}`)));
    flush();
    return out;
  };
  const chart = svg(
    'svg',
    { width: String(W), height: String(H), viewBox: `0 0 ${W} ${H}`, class: 'signal-chart', role: 'img', 'data-signal': signal },
    svg('line', { x1: '0', y1: String(H - 1), x2: String(W), y2: String(H - 1), class: 'axis' }),
    ...lines(series.baseline, 'baseline'),
    ...lines(series.canary, 'canary'),
  );
  const title = document.createElementNS(SVG, 'title');
  title.textContent = `${signal} per minute: canary (solid) against baseline (grey); top of the chart ${figure(signal, top)}`;
  chart.insertBefore(title, chart.firstChild);
  return chart;
}

function stepRows(s: AnalysisStep, now: number): Child[][] {
  if (s.verdict === null) return [[stepName(s.step), state('pending'), `window ends ${new Date(s.to).toISOString()}`, '-', '-', '-']];
  return SIGNALS.flatMap((signal) => {
    const g = s.signals.find((x) => x.signal === signal);
    if (!g) return [];
    return [[
      signal === 'restart-rate' ? h('span', {}, stepName(s.step), ' ', state(s.verdict), ' ', h('span', { class: 'muted' }, s.effect ?? ''), ' ', when(s.judgedAt, now)) : '',
      h('span', {}, mono(signal), ' ', state(g.verdict)),
      `canary ${figure(signal, g.canary.value)} (${g.canary.nodes} nodes, ${g.canary.sample} ${signal === 'error-ratio' ? 'req' : 'node-min'})`,
      `baseline ${figure(signal, g.baseline.value)} (${g.baseline.nodes} nodes, ${g.baseline.sample} ${signal === 'error-ratio' ? 'req' : 'node-min'})`,
      s.series?.[signal] ? signalChart(signal, s.series[signal]!) : '-',
      h('span', { class: 'reason' }, g.why),
    ]];
  });
}

// The analysis section of a run's page; null for a run without one (analysis off, or an older control plane).
export function analysisSection(r: RunView, now: number): Child {
  const a: AnalysisView | undefined = r.analysis;
  if (!a || a.mode === 'off') return null;
  const t = a.thresholds;
  return h(
    'div',
    { data: { section: 'analysis', mode: a.mode } },
    h('h2', {}, 'Analysis ', state(a.mode)),
    h('p', { class: 'muted' }, `Each step against the nodes still on the old version, over ${duration(a.windowMs)}; a signal fails when canaries are worse by restart-rate ${t.restartRate}/h, liveness-failures ${t.livenessRate}/h, error-ratio ${(t.errorRatio * 100).toFixed(2)} %.`),
    r.pauseReason ? h('div', { class: 'banner warn', data: { section: 'pause' } }, h('strong', {}, 'Paused: '), mono(r.pauseReason.code), h('div', { class: 'reason' }, r.pauseReason.message)) : null,
    a.waiting ? h('p', { class: 'bake', data: { section: 'analysis-waiting' } }, `Waiting for the analysis of the ${stepName(a.waiting.step)}: its window ends `, when(a.waiting.until, now), '.') : null,
    a.steps.length
      ? table(['step', 'signal', 'canary', 'baseline', 'over the window', 'why'], a.steps.flatMap((s) => stepRows(s, now)), { data: { table: 'analysis' } })
      : h('p', { class: 'muted' }, 'No step has converged yet.'),
  );
}

// The starts the launcher's crash tests cut (a kill -9, a power cut), and what must hold after
// any cut over the starts that follow (docs/design.md §14.4): the version on trial ran at most once in
// all, every start booted something, and the host settled on exactly one version.
import { writeCandidate } from '../../src/helper/self/trial-steps.js';
import type { Behaviour, LauncherHost, Run, Start } from './launcher-host.js';

export interface Scenario {
  name: string;
  pkg: string;
  pkgBehaviour: Behaviour;
  // Lays out the host before the start that is cut.
  setup(h: LauncherHost): Promise<void>;
  // The runs that are bounded: of `tree`, with `decision` (any when absent), at most `max`.
  bounded: { tree: string; decision?: string; max: number };
  // What the host may settle on (`decision version tree`).
  finals: string[];
}

const C = async (h: LauncherHost, behaviour: Behaviour = 'good') => {
  h.addRelease('1.0.0', behaviour);
  h.setCurrent('1.0.0');
};

export const SCENARIOS: Scenario[] = [
  {
    name: 'a candidate that exits at start',
    pkg: '0.9.0',
    pkgBehaviour: 'good',
    async setup(h) {
      await C(h);
      h.addRelease('2.0.0', 'exit');
      await writeCandidate(h.paths, '2.0.0');
    },
    bounded: { tree: 'versions/2.0.0', max: 1 },
    finals: ['current 1.0.0 versions/1.0.0'],
  },
  {
    name: 'a candidate that commits',
    pkg: '0.9.0',
    pkgBehaviour: 'good',
    async setup(h) {
      await C(h);
      h.addRelease('2.0.0', 'good');
      await writeCandidate(h.paths, '2.0.0');
    },
    bounded: { tree: 'versions/2.0.0', decision: 'trial', max: 1 },
    // 1.0.0 when the cut came after the candidate became `trying` and before its commit's swap.
    finals: ['current 2.0.0 versions/2.0.0', 'current 1.0.0 versions/1.0.0'],
  },
  {
    name: 'a trial that did not commit',
    pkg: '0.9.0',
    pkgBehaviour: 'good',
    async setup(h) {
      await C(h);
      h.addRelease('2.0.0', 'exit');
      h.writeSelf('trying', '{"schemaVersion":1,"version":"2.0.0","source":"release"}\n');
    },
    bounded: { tree: 'versions/2.0.0', max: 0 },
    finals: ['current 1.0.0 versions/1.0.0'],
  },
  {
    name: 'a newer package version that exits at start',
    pkg: '1.1.0',
    pkgBehaviour: 'exit',
    setup: (h) => C(h),
    bounded: { tree: 'package', decision: 'trial', max: 1 },
    finals: ['current 1.0.0 versions/1.0.0'],
  },
  {
    name: 'a newer package version that commits',
    pkg: '1.1.0',
    pkgBehaviour: 'good',
    setup: (h) => C(h),
    bounded: { tree: 'package', decision: 'trial', max: 1 },
    finals: ['current 1.1.0 versions/1.1.0', 'current 1.0.0 versions/1.0.0'],
  },
  {
    name: 'a current that never gets ready, at its third start',
    pkg: '0.9.0',
    pkgBehaviour: 'good',
    async setup(h) {
      await C(h, 'exit');
      h.writeSelf('starts', '{"schemaVersion":1,"version":"1.0.0","starts":2}\n');
    },
    // It ran twice already: at most once more before it is set aside.
    bounded: { tree: 'versions/1.0.0', decision: 'current', max: 1 },
    finals: ['fallback 0.9.0 package'],
  },
];

export const LATER_STARTS = 5;

const show = (r: Run | null) => (r ? `${r.decision} ${r.version} ${r.tree}` : 'nothing');

// What broke after a cut: `cut` are the runs the cut start made before it was cut (none, or
// its exec), `later` the starts after it.
export function violations(s: Scenario, h: LauncherHost, cut: Run[], later: Start[]): string[] {
  const bad: string[] = [];
  later.forEach((st, i) => {
    if (!st.run) bad.push(`start ${i + 1} after the cut ran nothing (exit ${st.code}): ${st.stderr.trim()}`);
  });
  const runs = [...cut, ...later.map((st) => st.run).filter((r): r is Run => r !== null)];
  const b = s.bounded;
  const n = runs.filter((r) => r.tree === b.tree && (!b.decision || r.decision === b.decision)).length;
  if (n > b.max) bad.push(`${b.tree}${b.decision ? ` (${b.decision})` : ''} ran ${n} times, at most ${b.max} allowed: ${runs.map(show).join(', ')}`);
  const last = later.slice(-3).map((st) => show(st.run));
  if (new Set(last).size !== 1) bad.push(`the last starts did not settle on one version: ${last.join(', ')}`);
  else if (!s.finals.includes(last[0]!)) bad.push(`settled on ${last[0]}, not one of ${s.finals.join(' | ')}`);
  const final = later.at(-1)?.run;
  if (final?.decision === 'current' && h.current() !== `versions/${final.version}`) bad.push(`ran current ${final.version} but current points at ${h.current()}`);
  return bad;
}

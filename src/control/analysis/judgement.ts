// What a judgement says (docs/design.md §19, "Judgement"): per signal, each cohort's figures and a
// verdict with its why; for the step, the worst verdict and one line naming it.
import type { SignalName } from './policy.js';

export type Verdict = 'pass' | 'fail' | 'inconclusive';

// A cohort's figure for one signal: its nodes with data, the pooled value (restarts or failures
// per node-hour, or errors per request; null: no data), and its sample (node-minutes for the
// rates, requests for the error ratio).
export interface CohortFigures {
  nodes: number;
  value: number | null;
  sample: number;
}

export interface SignalJudgement {
  signal: SignalName;
  verdict: Verdict;
  canary: CohortFigures;
  baseline: CohortFigures;
  // One sentence: why this verdict (the test's p-value and the effect, or what was too little).
  why: string;
}

export interface Judgement {
  verdict: Verdict;
  // The window judged, ISO times.
  from: string;
  to: string;
  signals: SignalJudgement[];
  // One line: the failing (else inconclusive) signal and both cohorts' figures, or that all passed.
  summary: string;
}

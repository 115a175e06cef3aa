// A target's run policy as stored (the targets table's JSON column), checked whenever it is read:
// the database is not trusted to hold only what steward-control wrote (docs/design.md §18).
import { StewardError } from '../../core/errors.js';
import * as z from '../../core/zod-mini.js';
import { DEFAULT_MAX_FETCH_FAILURES } from '../rollouts/run-options.js';
import { DEFAULT_RUN_ANALYSIS, readRunAnalysis } from '../../core/run-analysis.js';
import { parseJson } from './parse-json.js';
import type { TargetPolicy } from './store.js';

const count = z.number().check(z.int(), z.minimum(0), z.maximum(Number.MAX_SAFE_INTEGER));
const short = z.string().check(z.maxLength(4096));

export const targetPolicySchema = z.strictObject({
  selector: short,
  canaries: count,
  namedCanaries: z.array(z.string().check(z.maxLength(128))).check(z.maxLength(1000)),
  batch: z.string().check(z.maxLength(16)),
  bakeMs: count,
  maxFailures: count,
  maxRefused: z.string().check(z.maxLength(16)),
  // Absent in a policy stored before --max-fetch-failures: the default then.
  maxFetchFailures: z.optional(z.string().check(z.maxLength(16))),
  verdictTimeoutMs: count,
  allowRetryReverted: z.boolean(),
  windows: z.array(z.string().check(z.maxLength(256))).check(z.maxLength(64)),
  tz: z.string().check(z.maxLength(128)),
  startAt: z.nullable(count),
});

// The policy in a stored row, or STATE_INVALID naming the target. The analysis is its own column
// (schema 11): null for a target set before, which takes the default.
export function readTargetPolicy(text: string, target: string, analysisText: unknown = null): TargetPolicy {
  const r = targetPolicySchema.safeParse(parseJson<unknown>(text, null));
  if (!r.success) throw new StewardError('STATE_INVALID', `the stored policy of target ${target} is not a run policy steward-control wrote`);
  const analysis = analysisText === null || analysisText === undefined ? DEFAULT_RUN_ANALYSIS : readRunAnalysis(analysisText);
  if (!analysis) throw new StewardError('STATE_INVALID', `the stored analysis of target ${target} is not one steward-control wrote`);
  return { ...r.data, maxFetchFailures: r.data.maxFetchFailures ?? DEFAULT_MAX_FETCH_FAILURES, analysis };
}

// The policy column's text (without the analysis, which older instances' strict reading would
// refuse) and the analysis column's.
export function targetPolicyColumns(p: TargetPolicy): { policy: string; analysis: string } {
  const { analysis, ...rest } = p;
  return { policy: JSON.stringify(rest), analysis: JSON.stringify(analysis) };
}

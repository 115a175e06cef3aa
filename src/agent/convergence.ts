// Convergence (docs/design.md §6): each desired entry goes to the helper once, under the control
// plane's attemptId. The helper's answer, accepted or refused, is final for that attemptId:
// a refusal (HELD, BLOCKED, QUARANTINED, BUSY, a release problem...) makes a signed `refused`
// receipt, which is how the control plane learns; the agent does not retry it. An entry past
// its `notAfter` (its window closed, docs/design.md §11) is not handed to the helper at all.
import type { DesiredEntry } from '../core/control-api.js';
import { StewardError, UNDECIDED_CODES } from '../core/errors.js';
import type { Clock } from '../platform/clock.js';
import type { FetchAuth } from '../platform/download-auth.js';
import type { ActedStore } from './acted-store.js';
import type { HelperPort } from './helper-port.js';

export type Logf = (format: string, ...args: unknown[]) => void;

export interface ConvergeDeps {
  // `rollback`: for a target's revert entries; without it such an entry is refused here.
  helper: Pick<HelperPort, 'update'> & Partial<Pick<HelperPort, 'rollback'>>;
  // The node's credential for the control plane's downloads, made afresh for each entry.
  fetchAuth?: () => FetchAuth;
  // The agent's control-plane URLs, the one that answered last first: each serves the artifacts.
  mirrors?: () => readonly string[];
  // Why the newer TUF metadata the control plane offered could not be fetched, while the helper
  // still trusts older (heartbeat-loop.ts); none: nothing is missing.
  trustFetchFailed?: () => string | undefined;
  acted: ActedStore;
  clock: Pick<Clock, 'now'>;
  log: Logf;
}

export type ConvergeResult =
  | { attemptId: string; app: string; result: 'already-acted' }
  | { attemptId: string; app: string; result: 'accepted' | 'settled' }
  | { attemptId: string; app: string; result: 'refused'; code: string }
  // Its window closed (notAfter at or before now): not handed on, not recorded as acted on.
  | { attemptId: string; app: string; result: 'expired'; notAfter: number }
  // The helper did not answer (unreachable, still recovering): tried again at the next heartbeat.
  | { attemptId: string; app: string; result: 'deferred'; code: string };

// Hands every desired entry not yet acted on to the helper, one at a time, in order.
export async function convergeDesired(desired: readonly DesiredEntry[], deps: ConvergeDeps): Promise<ConvergeResult[]> {
  const results: ConvergeResult[] = [];
  for (const e of desired) {
    const base = { attemptId: e.attemptId, app: e.app };
    if (deps.acted.has(e.attemptId)) {
      results.push({ ...base, result: 'already-acted' });
      continue;
    }
    if (e.notAfter !== undefined && deps.clock.now() >= e.notAfter) {
      deps.log('desired not handed to the helper app=%s version=%s attemptId=%s: its window closed at %s', e.app, e.version, e.attemptId, new Date(e.notAfter).toISOString());
      results.push({ ...base, result: 'expired', notAfter: e.notAfter });
      continue;
    }
    let answer: string;
    try {
      if (e.rollback && !deps.helper.rollback) throw new StewardError('BAD_REQUEST', `a rollback of ${e.app} was asked for, and this agent hands the helper none`);
      const a = e.rollback ? await deps.helper.rollback!(e) : await deps.helper.update(e, deps.fetchAuth?.(), deps.mirrors?.(), deps.trustFetchFailed?.());
      answer = 'accepted' in a ? 'accepted' : a.settled ? 'settled' : `outcome:${a.outcome}`;
      deps.log('desired handed to the helper app=%s version=%s attemptId=%s answer=%s', e.app, e.version, e.attemptId, answer);
      results.push({ ...base, result: 'settled' === answer ? 'settled' : 'accepted' });
    } catch (err) {
      const code = err instanceof StewardError ? err.code : 'INTERNAL';
      if (UNDECIDED_CODES.has(code)) {
        deps.log('desired deferred app=%s version=%s attemptId=%s code=%s: trying again at the next heartbeat', e.app, e.version, e.attemptId, code);
        results.push({ ...base, result: 'deferred', code });
        continue;
      }
      answer = `refused:${code}`;
      deps.log('desired refused by the helper app=%s version=%s attemptId=%s code=%s message=%j: not retried', e.app, e.version, e.attemptId, code, (err as Error).message);
      results.push({ ...base, result: 'refused', code });
    }
    await deps.acted.add({ attemptId: e.attemptId, app: e.app, at: deps.clock.now(), answer });
  }
  return results;
}

// journal/<app>.json (DESIGN §4) checked without zod (issue 8, row 5: the helper reads and writes
// it on every update and at every start's recovery, and would otherwise load zod for it).
// Accepts exactly what journalSchema of journal-schema.ts accepts and returns what it would
// (test/core/journal-check.test.ts holds both to the same verdicts and values, both ways).
// The journal's constants live here so that zod-free code can use them; journal-schema.ts
// re-exports them.
import type { Checker } from './checker.js';
import type { Journal } from './journal-schema.js';
import { isEpoch, isObject, isString, onlyKeys, type Obj } from './json-checks.js';
import { APP_NAME_RE, ATTEMPT_ID_RE, INTEGRITY_RE } from './name-checks.js';
import { checkQuarantineEntry } from './state-check.js';
import { isVersion } from './version.js';

export const JOURNAL_SCHEMA_VERSION = 1;

// Where an attempt is: `activating` until a verdict is durable, then one terminal outcome.
export const JOURNAL_OUTCOMES = ['activating', 'active', 'rolled-back', 'failed'] as const;
export type JournalOutcome = (typeof JOURNAL_OUTCOMES)[number];
export const TERMINAL_OUTCOMES = ['active', 'rolled-back', 'failed'] as const;

// Whether an outcome is terminal (the attempt is over).
export function isTerminal(outcome: JournalOutcome): outcome is (typeof TERMINAL_OUTCOMES)[number] {
  return outcome !== 'activating';
}

const KEYS = ['schemaVersion', 'attemptId', 'app', 'fromVersion', 'targetVersion', 'integrity', 'outcome', 'startedAt', 'updatedAt', 'retryAfter', 'rollbackHealthy', 'reason', 'logFile', 'prior'];
const OUTCOMES: readonly unknown[] = JOURNAL_OUTCOMES;

const isVersionOrNull = (v: unknown): boolean => v === null || isVersion(v);

// priorStateSchema's value, or null when it refuses `v`.
function checkPrior(v: unknown): Obj | null {
  if (!isObject(v) || !onlyKeys(v, ['previous', 'highestActive', 'quarantine'])) return null;
  if (!isVersionOrNull(v.previous) || !isVersionOrNull(v.highestActive)) return null;
  if (v.quarantine === null) return { previous: v.previous, highestActive: v.highestActive, quarantine: null };
  const quarantine = checkQuarantineEntry(v.quarantine);
  if (quarantine === null) return null;
  return { previous: v.previous, highestActive: v.highestActive, quarantine };
}

// `v` as a journal, or null when journalSchema would refuse it. An optional key present with
// the value undefined is kept as such, as zod keeps it.
export function checkJournal(v: unknown): Journal | null {
  if (!isObject(v) || !onlyKeys(v, KEYS)) return null;
  if (v.schemaVersion !== JOURNAL_SCHEMA_VERSION) return null;
  if (typeof v.attemptId !== 'string' || !ATTEMPT_ID_RE.test(v.attemptId)) return null;
  if (typeof v.app !== 'string' || !APP_NAME_RE.test(v.app)) return null;
  if (!isVersionOrNull(v.fromVersion) || !isVersion(v.targetVersion)) return null;
  if (typeof v.integrity !== 'string' || !INTEGRITY_RE.test(v.integrity)) return null;
  if (!OUTCOMES.includes(v.outcome)) return null;
  if (!isEpoch(v.startedAt) || !isEpoch(v.updatedAt)) return null;
  const out: Obj = {
    schemaVersion: v.schemaVersion,
    attemptId: v.attemptId,
    app: v.app,
    fromVersion: v.fromVersion,
    targetVersion: v.targetVersion,
    integrity: v.integrity,
    outcome: v.outcome,
    startedAt: v.startedAt,
    updatedAt: v.updatedAt,
  };
  if ('retryAfter' in v) {
    if (v.retryAfter !== undefined && !isEpoch(v.retryAfter)) return null;
    out.retryAfter = v.retryAfter;
  }
  if ('rollbackHealthy' in v) {
    if (v.rollbackHealthy !== undefined && typeof v.rollbackHealthy !== 'boolean') return null;
    out.rollbackHealthy = v.rollbackHealthy;
  }
  if ('reason' in v) {
    const r = v.reason;
    if (r === undefined) out.reason = undefined;
    else {
      if (!isObject(r) || !onlyKeys(r, ['code', 'message']) || !isString(r.code, 0, 64) || !isString(r.message, 0, 2048)) return null;
      out.reason = { code: r.code, message: r.message };
    }
  }
  if ('logFile' in v) {
    if (v.logFile !== undefined && !isString(v.logFile, 0, 4096)) return null;
    out.logFile = v.logFile;
  }
  if ('prior' in v) {
    if (v.prior === undefined) out.prior = undefined;
    else {
      const prior = checkPrior(v.prior);
      if (prior === null) return null;
      out.prior = prior;
    }
  }
  return out as unknown as Journal;
}

// The journal's checker (a module-level constant: readVersionedJson keys its parse cache on it).
export const journalChecker: Checker<Journal> = {
  check: checkJournal,
  schema: async () => (await import('./journal-schema.js')).journalSchema,
};

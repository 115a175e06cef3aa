// state/<app>.json (DESIGN §2) checked without zod (issue 8, row 5: the helper reads it on every
// supervisor pass, status and update, and writes it on every verdict). Accepts exactly what
// appStateSchema of state-schemas.ts accepts and returns what it would
// (test/core/state-check.test.ts holds both to the same verdicts and values, both ways).
// APP_STATE_SCHEMA_VERSION and emptyAppState live here so that zod-free code can use them;
// state-schemas.ts re-exports them.
import type { Checker } from './checker.js';
import { isEpoch, isInt, isObject, isPlainObject, isString, onlyKeys, type Obj } from './json-checks.js';
import type { AppState } from './state-schemas.js';
import { isVersion } from './version.js';

export const APP_STATE_SCHEMA_VERSION = 1;

// The state of an app that has never been updated.
export function emptyAppState(): AppState {
  return { schemaVersion: APP_STATE_SCHEMA_VERSION, previous: null, highestActive: null, quarantine: {}, hold: null, blocked: null };
}

const KEYS = ['schemaVersion', 'previous', 'highestActive', 'quarantine', 'hold', 'blocked'];

// quarantineEntrySchema (also a journal's prior.quarantine): {failures, retryAfter}.
export function checkQuarantineEntry(e: unknown): { failures: number; retryAfter: number } | null {
  if (!isObject(e) || !onlyKeys(e, ['failures', 'retryAfter']) || !isInt(e.failures, 0, Number.MAX_SAFE_INTEGER) || !isEpoch(e.retryAfter)) return null;
  return { failures: e.failures, retryAfter: e.retryAfter };
}

// z.record(versionSchema, quarantineEntrySchema) as this zod (4.x) applies it: every own
// enumerable key must be a version (a symbol or any other string is refused) and its value an
// entry, except a key "__proto__" (JSON.parse makes it an own key), which is skipped unchecked
// and left out of the result.
function checkQuarantine(v: unknown): Record<string, { failures: number; retryAfter: number }> | null {
  if (!isPlainObject(v)) return null;
  const out: Record<string, { failures: number; retryAfter: number }> = {};
  for (const key of Reflect.ownKeys(v)) {
    if (key === '__proto__' || !Object.prototype.propertyIsEnumerable.call(v, key)) continue;
    if (!isVersion(key)) return null;
    const entry = checkQuarantineEntry(v[key]);
    if (entry === null) return null;
    out[key] = entry;
  }
  return out;
}

// `v` as an app state, or null when appStateSchema would refuse it.
export function checkAppState(v: unknown): AppState | null {
  if (!isObject(v) || !onlyKeys(v, KEYS)) return null;
  if (v.schemaVersion !== APP_STATE_SCHEMA_VERSION) return null;
  if ((v.previous !== null && !isVersion(v.previous)) || (v.highestActive !== null && !isVersion(v.highestActive))) return null;
  const quarantine = checkQuarantine(v.quarantine);
  if (quarantine === null) return null;
  let hold: Obj | null = null;
  if (v.hold !== null) {
    const h = v.hold;
    if (!isObject(h) || !onlyKeys(h, ['by', 'at', 'reason']) || !isString(h.by, 0, 256) || !isEpoch(h.at) || !isString(h.reason, 0, 512)) return null;
    hold = { by: h.by, at: h.at, reason: h.reason };
  }
  let blocked: Obj | null = null;
  if (v.blocked !== null) {
    const b = v.blocked;
    if (!isObject(b) || !onlyKeys(b, ['reason', 'message', 'since']) || !isString(b.reason, 0, 64)) return null;
    blocked = { reason: b.reason };
    if ('message' in b) {
      if (b.message !== undefined && !isString(b.message, 0, 512)) return null;
      blocked.message = b.message;
    }
    if (!isEpoch(b.since)) return null;
    blocked.since = b.since;
  }
  return { schemaVersion: APP_STATE_SCHEMA_VERSION, previous: v.previous, highestActive: v.highestActive, quarantine, hold, blocked } as unknown as AppState;
}

// The app state's checker (a module-level constant: readVersionedJson keys its parse cache on it).
export const appStateChecker: Checker<AppState> = {
  check: checkAppState,
  schema: async () => (await import('./state-schemas.js')).appStateSchema,
};

// supervisor/<app>.json checked without zod (issue 8, row 5: the helper reads it for every app on
// every supervisor pass and writes it at each start and exit). Accepts exactly what
// runRecordSchema of run-record-schema.ts accepts and returns what it would
// (test/core/run-record-check.test.ts holds both to the same verdicts and values, both ways).
// RUN_RECORD_SCHEMA_VERSION lives here so that zod-free code can use it; run-record-schema.ts
// re-exports it.
import type { Checker } from './checker.js';
import { isEpoch, isInt, isObject, isString, onlyKeys, type Obj } from './json-checks.js';
import { APP_NAME_RE } from './name-checks.js';
import type { RunRecord } from './run-record-schema.js';
import { isVersion } from './version.js';

export const RUN_RECORD_SCHEMA_VERSION = 1;

// An instance token (run-record-schema.ts `instance`): 128 random bits in lowercase hex.
export const INSTANCE_TOKEN_RE = /^[0-9a-f]{32}$/;

const KEYS = ['schemaVersion', 'app', 'expected', 'version', 'process', 'startedAt', 'logOffset', 'instance', 'supervisor'];
const SUPERVISOR_KEYS = ['state', 'attempts', 'lastStartAt', 'lastExitAt', 'nextAttemptAt', 'lastExit', 'giveUpReason'];
const STATES: readonly unknown[] = ['running', 'waiting', 'error', 'stopped'];
const MAX = Number.MAX_SAFE_INTEGER;

const isEpochOrNull = (v: unknown): boolean => v === null || isEpoch(v);

// procIdentitySchema's value, or null when it refuses `v`.
function checkProc(v: unknown): Obj | null {
  if (!isObject(v) || !onlyKeys(v, ['pid', 'startTicks', 'bootId'])) return null;
  if (!isInt(v.pid, 1, MAX) || !isInt(v.startTicks, 0, MAX) || !isString(v.bootId, 1, 64)) return null;
  return { pid: v.pid, startTicks: v.startTicks, bootId: v.bootId };
}

// supervisorStateSchema's value, or null when it refuses `v`.
function checkSupervisor(v: unknown): Obj | null {
  if (!isObject(v) || !onlyKeys(v, SUPERVISOR_KEYS)) return null;
  if (!STATES.includes(v.state) || !isInt(v.attempts, 0, MAX)) return null;
  if (!isEpochOrNull(v.lastStartAt) || !isEpochOrNull(v.lastExitAt) || !isEpochOrNull(v.nextAttemptAt)) return null;
  let lastExit: Obj | null = null;
  if (v.lastExit !== null) {
    const e = v.lastExit;
    if (!isObject(e) || !onlyKeys(e, ['code', 'signal'])) return null;
    if ((e.code !== null && !isInt(e.code, -MAX, MAX)) || (e.signal !== null && !isString(e.signal, 0, 32))) return null;
    lastExit = { code: e.code, signal: e.signal };
  }
  if (v.giveUpReason !== null && !isString(v.giveUpReason, 0, 1024)) return null;
  return { state: v.state, attempts: v.attempts, lastStartAt: v.lastStartAt, lastExitAt: v.lastExitAt, nextAttemptAt: v.nextAttemptAt, lastExit, giveUpReason: v.giveUpReason };
}

// `v` as a run record, or null when runRecordSchema would refuse it. An optional key present
// with the value undefined is kept as such, as zod keeps it.
export function checkRunRecord(v: unknown): RunRecord | null {
  if (!isObject(v) || !onlyKeys(v, KEYS)) return null;
  if (v.schemaVersion !== RUN_RECORD_SCHEMA_VERSION) return null;
  if (typeof v.app !== 'string' || !APP_NAME_RE.test(v.app)) return null;
  if (v.expected !== 'running' && v.expected !== 'stopped') return null;
  if (v.version !== null && !isVersion(v.version)) return null;
  let proc: Obj | null = null;
  if (v.process !== null) {
    proc = checkProc(v.process);
    if (proc === null) return null;
  }
  if (!isEpochOrNull(v.startedAt)) return null;
  const out: Obj = { schemaVersion: v.schemaVersion, app: v.app, expected: v.expected, version: v.version, process: proc, startedAt: v.startedAt };
  if ('logOffset' in v) {
    if (v.logOffset !== undefined && !isInt(v.logOffset, 0, MAX)) return null;
    out.logOffset = v.logOffset;
  }
  if ('instance' in v) {
    if (v.instance !== undefined && !(typeof v.instance === 'string' && INSTANCE_TOKEN_RE.test(v.instance))) return null;
    out.instance = v.instance;
  }
  if ('supervisor' in v) {
    if (v.supervisor === undefined) out.supervisor = undefined;
    else {
      const s = checkSupervisor(v.supervisor);
      if (s === null) return null;
      out.supervisor = s;
    }
  }
  return out as unknown as RunRecord;
}

// The run record's checker (a module-level constant: readVersionedJson keys its parse cache on it).
export const runRecordChecker: Checker<RunRecord> = {
  check: checkRunRecord,
  schema: async () => (await import('./run-record-schema.js')).runRecordSchema,
};

// The host config (DESIGN §2) checked without zod (issue 8, row 5: both daemons read it at every
// start, and the agent would otherwise load zod for nothing else). Accepts exactly what
// hostConfigSchema of config-schema.ts accepts and returns what it would, defaults filled in
// (test/core/config-check.test.ts holds both to the same verdicts and values, both ways). A
// refused config is explained by the schema itself (helper/config.ts loads it only then).
import type { HostConfig } from './config-schema.js';
import { APP_NAME_RE, TEXTFILE_RE } from './name-checks.js';
import { isObject, onlyKeys, type Obj } from './json-checks.js';

const USER_RE = /^[a-z_][a-z0-9_.-]{0,31}$/;
const UNIT_RE = /^[A-Za-z0-9:_.@-]{1,250}\.service$/;

// Thrown inside the checker when a value is refused; checkHostConfig turns it into null.
class Refused extends Error {}
const refused = (): never => {
  throw new Refused();
};

// An integer field in [min, max] (zod's .int(): a safe integer), `dflt` when absent.
function int(o: Obj, key: string, min: number, max: number, dflt?: number): number {
  const v = o[key];
  if (v === undefined && dflt !== undefined) return dflt;
  if (!Number.isSafeInteger(v) || (v as number) < min || (v as number) > max) refused();
  return v as number;
}

// A strict object with only `keys`.
function obj(v: unknown, keys: readonly string[]): Obj {
  if (!isObject(v) || !onlyKeys(v, keys)) refused();
  return v as Obj;
}

const MAX = Number.MAX_SAFE_INTEGER;
const DAY = 86_400_000;

function restart(v: unknown): Obj {
  const o = obj(v, ['baseMs', 'capMs', 'maxAttempts', 'healthyMs']);
  return { baseMs: int(o, 'baseMs', 0, DAY, 5_000), capMs: int(o, 'capMs', 0, DAY, 300_000), maxAttempts: int(o, 'maxAttempts', 1, 1000, 5), healthyMs: int(o, 'healthyMs', 0, DAY, 600_000) };
}

function quarantine(v: unknown): { baseMs: number; capMs: number } {
  const o = obj(v, ['baseMs', 'capMs']);
  return { baseMs: int(o, 'baseMs', 0, DAY * 30, 300_000), capMs: int(o, 'capMs', 0, DAY * 30, DAY) };
}

// An optional string field matching `re`: absent stays absent.
function optName(o: Obj, key: string, re: RegExp, out: Obj): void {
  if (!(key in o) || o[key] === undefined) return;
  const v = o[key];
  if (typeof v !== 'string' || !re.test(v)) refused();
  out[key] = v;
}

function app(v: unknown): HostConfig['apps'][string] {
  // z.preprocess: an object without `runner` is a process app.
  const a = isObject(v) && !('runner' in v) ? { ...v, runner: 'process' } : v;
  if (!isObject(a)) return refused();
  if (a.runner === 'process') {
    const o = obj(a, ['runner', 'user', 'group', 'keepReleases', 'restart', 'quarantine', 'stopTimeoutMs', 'logMaxBytes']);
    const out: Obj = { runner: 'process' };
    optName(o, 'user', USER_RE, out);
    optName(o, 'group', USER_RE, out);
    out.keepReleases = int(o, 'keepReleases', 2, 100, 3);
    out.restart = restart(o.restart === undefined ? {} : o.restart);
    out.quarantine = quarantine(o.quarantine === undefined ? {} : o.quarantine);
    out.stopTimeoutMs = int(o, 'stopTimeoutMs', 0, 3_600_000, 10_000);
    out.logMaxBytes = int(o, 'logMaxBytes', 64 * 1024, MAX, 50 * 1024 * 1024);
    return out as HostConfig['apps'][string];
  }
  if (a.runner === 'unit') {
    const o = obj(a, ['runner', 'unit', 'keepReleases', 'quarantine']);
    if (typeof o.unit !== 'string' || !UNIT_RE.test(o.unit)) refused();
    return { runner: 'unit', unit: o.unit as string, keepReleases: int(o, 'keepReleases', 2, 100, 3), quarantine: quarantine(o.quarantine === undefined ? {} : o.quarantine) };
  }
  return refused();
}

// zod's z.string().url() as this zod (4.x) has it: what URL parses once trimmed; the value is
// the trimmed string without tabs and newlines.
function url(v: unknown): string {
  if (typeof v !== 'string') return refused();
  const trimmed = v.trim();
  return URL.canParse(trimmed) ? trimmed.replace(/[\t\n\r]/g, '') : refused();
}

function optCaFile(o: Obj, out: Obj): void {
  if (!('caFile' in o) || o.caFile === undefined) return;
  if (typeof o.caFile !== 'string' || o.caFile.length < 1) refused();
  out.caFile = o.caFile;
}

function check(v: unknown): HostConfig {
  const o = obj(v, ['apps', 'controlPlane', 'api', 'fetch', 'extract', 'supervisor', 'metrics']);
  const apps: Obj = {};
  if (o.apps !== undefined) {
    if (!isObject(o.apps)) refused();
    for (const [name, a] of Object.entries(o.apps as Obj)) {
      if (!APP_NAME_RE.test(name)) refused();
      apps[name] = app(a);
    }
  }
  const out: Obj = { apps };
  if (o.controlPlane !== undefined) {
    const c = obj(o.controlPlane, ['url', 'caFile', 'insecure']);
    const cp: Obj = { url: url(c.url) };
    optCaFile(c, cp);
    if (c.insecure !== undefined && typeof c.insecure !== 'boolean') refused();
    cp.insecure = c.insecure === undefined ? false : c.insecure;
    out.controlPlane = cp;
  }
  const api = obj(o.api === undefined ? {} : o.api, ['idleTimeoutMs', 'maxConnections', 'maxRequestBytes']);
  out.api = { idleTimeoutMs: int(api, 'idleTimeoutMs', 100, 3_600_000, 10_000), maxConnections: int(api, 'maxConnections', 2, 10_000, 64), maxRequestBytes: int(api, 'maxRequestBytes', 1024, 1024 * 1024, 64 * 1024) };
  const f = obj(o.fetch === undefined ? {} : o.fetch, ['deadlineMs', 'minBytesPerSecond', 'minSpeedWindowMs', 'maxRedirects', 'caFile', 'diskReserveBytes', 'maxUnsignedBytes']);
  const fetch: Obj = {
    deadlineMs: int(f, 'deadlineMs', 1000, DAY, 600_000),
    minBytesPerSecond: int(f, 'minBytesPerSecond', 0, MAX, 1024),
    minSpeedWindowMs: int(f, 'minSpeedWindowMs', 100, 3_600_000, 30_000),
    maxRedirects: int(f, 'maxRedirects', 0, 20, 5),
  };
  optCaFile(f, fetch);
  fetch.diskReserveBytes = int(f, 'diskReserveBytes', 0, MAX, 10 * 1024 * 1024);
  fetch.maxUnsignedBytes = int(f, 'maxUnsignedBytes', 1, MAX, 2 * 1024 * 1024 * 1024);
  out.fetch = fetch;
  const e = obj(o.extract === undefined ? {} : o.extract, ['maxEntries', 'maxBytes', 'maxPathLength', 'maxDepth', 'maxRatio']);
  out.extract = {
    maxEntries: int(e, 'maxEntries', 1, MAX, 100_000),
    maxBytes: int(e, 'maxBytes', 1, MAX, 2 * 1024 * 1024 * 1024),
    maxPathLength: int(e, 'maxPathLength', 1, 4096, 4096),
    maxDepth: int(e, 'maxDepth', 1, 1024, 64),
    maxRatio: int(e, 'maxRatio', 1, MAX, 200),
  };
  const s = obj(o.supervisor === undefined ? {} : o.supervisor, ['processRunner', 'sweepMs', 'pollMs', 'logCheckMs']);
  const runner = s.processRunner === undefined ? 'auto' : s.processRunner;
  if (runner !== 'auto' && runner !== 'systemd' && runner !== 'detached') refused();
  out.supervisor = {
    processRunner: runner,
    sweepMs: int(s, 'sweepMs', 100, 3_600_000, 60_000),
    pollMs: int(s, 'pollMs', 50, 600_000, 2_000),
    logCheckMs: int(s, 'logCheckMs', 100, 3_600_000, 5_000),
  };
  if (o.metrics !== undefined) {
    const m = obj(o.metrics, ['textfile']);
    const t = m.textfile;
    if (t !== undefined && (typeof t !== 'string' || t.length > 4096 || !TEXTFILE_RE.test(t))) refused();
    out.metrics = t === undefined ? {} : { textfile: t };
  }
  return out as unknown as HostConfig;
}

// The host config `v` (parsed JSON) with its defaults, or null when hostConfigSchema refuses it.
export function checkHostConfig(v: unknown): HostConfig | null {
  try {
    return check(v);
  } catch (err) {
    if (err instanceof Refused) return null;
    throw err;
  }
}

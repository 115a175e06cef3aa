// One heartbeat app checked without zod (issue 8, row 5): the agent builds these from the
// helper's status answer on every heartbeat. Accepts exactly what heartbeatAppSchema of
// core/heartbeat-schema.ts accepts and returns what it would (test/agent/heartbeat-app-check.test.ts
// holds both to the same verdicts, both ways). The status answer comes over a socket: every
// field is checked before it goes into a signed heartbeat.
import type { HeartbeatApp } from '../core/heartbeat-schema.js';
import { APP_NAME_RE } from '../core/name-checks.js';
import { isVersion } from '../core/version.js';
import { isInt, isObject, onlyKeys, type Obj } from '../core/json-checks.js';

// Only `allowed` keys (zod's strictObject refuses any other).
const STATES: readonly string[] = ['running', 'waiting', 'error', 'stopped'];

// `v` as a heartbeat app, or null when heartbeatAppSchema would refuse it.
export function readHeartbeatApp(v: unknown): HeartbeatApp | null {
  if (!isObject(v) || !onlyKeys(v, ['name', 'current', 'previous', 'held', 'blocked', 'supervisor'])) return null;
  const { name, current, previous, held, blocked, supervisor: s } = v;
  if (typeof name !== 'string' || !APP_NAME_RE.test(name)) return null;
  if (current !== null && !isVersion(current)) return null;
  if (previous !== null && !isVersion(previous)) return null;
  if (typeof held !== 'boolean' || typeof blocked !== 'boolean') return null;
  if (!isObject(s) || !onlyKeys(s, ['state', 'pid', 'attempts', 'since'])) return null;
  if (typeof s.state !== 'string' || !STATES.includes(s.state)) return null;
  if (s.pid !== undefined && !isInt(s.pid, 1, 2 ** 31 - 1)) return null;
  if (!isInt(s.attempts, 0, 1_000_000)) return null;
  if (s.since !== null && !isInt(s.since, 0, Number.MAX_SAFE_INTEGER)) return null;
  const supervisor: HeartbeatApp['supervisor'] = { state: s.state as HeartbeatApp['supervisor']['state'], attempts: s.attempts, since: s.since as number | null };
  if ('pid' in s) supervisor.pid = s.pid as number | undefined;
  return { name, current: current as string | null, previous: previous as string | null, held, blocked, supervisor };
}

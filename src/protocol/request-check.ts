// Local API requests (DESIGN §7) checked without zod (issue 8, row 5: the agent asks the helper
// for `status` and `receipts` on every heartbeat, and an update's requests come the same way).
// Each op's checker accepts exactly what its schema of schemas.ts accepts and returns what it
// would (test/protocol/request-check.test.ts holds them together both ways); the schemas are
// loaded only to word a refusal.
import type { z } from 'zod';
import type { Checker } from '../core/checker.js';
import { PLAIN_TEXT_RE } from '../core/control-chars.js';
import { checkEnvelope } from '../core/envelope-check.js';
import { isObject, type Obj } from '../core/json-checks.js';
import { APP_NAME_RE, ATTEMPT_ID_RE, INTEGRITY_RE } from '../core/name-checks.js';
import { isVersion } from '../core/version.js';
import { PROTOCOL_VERSION, type OpName } from './ops.js';
import type { requestSchemas } from './schemas.js';

type Schemas = typeof requestSchemas;
// The checked request of op `K`.
export type RequestOf<K extends OpName> = z.infer<Schemas[K]>;

// A field's rule: the value it keeps, or NO when the schema refuses it.
const NO = Symbol('refused');
type Rule = (v: unknown) => unknown;
const str = (min: number, max: number): Rule => (v) => (typeof v === 'string' && v.length >= min && v.length <= max ? v : NO);
const matching = (re: RegExp): Rule => (v) => (typeof v === 'string' && re.test(v) ? v : NO);
const int = (min: number, max: number): Rule => (v) => (Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max ? v : NO);
const bool: Rule = (v) => (typeof v === 'boolean' ? v : NO);
const app = matching(APP_NAME_RE);
const version: Rule = (v) => (isVersion(v) ? v : NO);
const attemptId = matching(ATTEMPT_ID_RE);
// `by`: accepted from older clients and ignored (a hold names the peer, hold.ts); no control characters.
const who: Rule = (v) => (str(0, 128)(v) !== NO && PLAIN_TEXT_RE.test(v as string) ? v : NO);
const envelope: Rule = (v) => {
  const c = checkEnvelope(v, 'manifest');
  return c.ok ? c.value : NO;
};
// id: a string of at most 128 characters or a safe integer.
const id: Rule = (v) => (typeof v === 'string' ? str(0, 128)(v) : int(-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)(v));

// An op's fields: [rule, required].
type Shape = Record<string, [Rule, boolean]>;
const releaseSource: Shape = {
  app: [app, true],
  version: [version, true],
  manifest: [envelope, false],
  integrity: [matching(INTEGRITY_RE), false],
  path: [str(1, 4096), false],
  upload: [int(0, Number.MAX_SAFE_INTEGER), false],
  allowUnsigned: [bool, false],
  allowDowngrade: [bool, false],
  force: [bool, false],
  attemptId: [attemptId, false],
  notAfter: [int(0, Number.MAX_SAFE_INTEGER), false],
};
const runState: Shape = { app: [app, true], by: [who, false] };
const SHAPES: Record<OpName, Shape> = {
  status: { app: [app, false] },
  releases: { app: [app, true] },
  receipts: { app: [app, false] },
  stage: releaseSource,
  update: { ...releaseSource, noWait: [bool, false], by: [who, false] },
  rollback: { app: [app, true], to: [version, false], attemptId: [attemptId, false], noWait: [bool, false], by: [who, false] },
  recover: { app: [app, true], to: [version, false], attemptId: [attemptId, false], by: [who, false] },
  prune: { app: [app, true], keep: [int(2, 100), false] },
  'release-hold': { app: [app, true] },
  start: runState,
  stop: runState,
  restart: runState,
};

// `v` as the request of `op` its schema returns, or null when the schema refuses it.
function checkRequest(op: OpName, v: unknown): Obj | null {
  if (!isObject(v) || v.v !== PROTOCOL_VERSION || v.op !== op) return null;
  const shape = SHAPES[op];
  const idv = id(v.id);
  if (idv === NO) return null;
  const out: Obj = { v: PROTOCOL_VERSION, id: idv, op };
  for (const [key, value] of Object.entries(v)) {
    if (key === 'v' || key === 'id' || key === 'op') continue;
    const field = Object.hasOwn(shape, key) ? shape[key] : undefined;
    if (!field) return null;
    // An optional key present as undefined stays so (not from JSON, but the schema allows it).
    if (value === undefined && !field[1]) {
      out[key] = undefined;
      continue;
    }
    const kept = field[0](value);
    if (kept === NO) return null;
    out[key] = kept;
  }
  for (const [key, [, required]] of Object.entries(shape)) if (required && !Object.hasOwn(v, key)) return null;
  return out;
}

// One Checker per op.
export const requestCheckers = Object.fromEntries(
  (Object.keys(SHAPES) as OpName[]).map((op) => [
    op,
    {
      check: (v: unknown) => checkRequest(op, v),
      schema: async () => (await import('./schemas.js')).requestSchemas[op] as unknown as z.ZodType<Obj>,
    } satisfies Checker<Obj>,
  ]),
) as { [K in OpName]: Checker<RequestOf<K>> };

// What every request has before its op is known (schemas.ts requestEnvelopeSchema, a loose
// object: other keys are the op's to check): {v, id, op}.
export const requestEnvelopeChecker: Checker<Obj & { v: 1; id: string | number; op: string }> = {
  check: (v) => {
    if (!isObject(v) || v.v !== PROTOCOL_VERSION || id(v.id) === NO || typeof v.op !== 'string' || v.op.length > 64) return null;
    // As the schema returns it: every key but "__proto__" (an own key after JSON.parse), which
    // zod leaves out.
    const out: Obj = {};
    for (const k of Object.keys(v)) if (k !== '__proto__') out[k] = v[k];
    return out as Obj & { v: 1; id: string | number; op: string };
  },
  schema: async () => (await import('./schemas.js')).requestEnvelopeSchema as unknown as z.ZodType<Obj & { v: 1; id: string | number; op: string }>,
};

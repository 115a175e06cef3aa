// What the property tests of the hand-written checkers share (the zod-free readers of hostile
// JSON: control-answer, heartbeat-app-check, agent-file-checks, config-check, receipt-check...):
// edge-value generators, and the property itself: the checker and its zod schema reach the
// same verdict on every input and, when they accept, return the same value.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import path from 'node:path';
import fc from 'fast-check';
import { decodeGolden, encodeGolden, type Json } from './golden-encoding.js';
import { selectGolden } from './golden-selection.js';

export type Obj = Record<string, unknown>;

// Values of the wrong type for any field.
export const junk = fc.oneof(fc.string({ maxLength: 6 }), fc.integer(), fc.double(), fc.constant(null), fc.boolean(), fc.constant([]), fc.constant({}));

// `o` with `key` set to a value of `edge`.
export const withKey = (o: fc.Arbitrary<Obj>, key: string, edge: fc.Arbitrary<unknown>): fc.Arbitrary<Obj> =>
  fc.tuple(o, edge).map(([v, x]) => ({ ...v, [key]: x }));

// Strings of `ch` repeated each of `ns` times (a limit and its neighbours).
export const lengths = (ch: string, ...ns: number[]): fc.Arbitrary<string> => fc.constantFrom(...ns.map((n) => ch.repeat(n)));

export const hex16 = fc.stringMatching(/^[0-9a-f]{16}$/);

// The name rules of name-checks.ts and version.ts (and epochs), and values just past them.
export const MAX = Number.MAX_SAFE_INTEGER;
export const INTEGRITY = `sha512-${'A'.repeat(86)}==`;
export const integrityEdge = fc.oneof(
  fc.constantFrom(`sha512-${'A'.repeat(85)}==`, `sha512-${'A'.repeat(87)}==`, `sha256-${'A'.repeat(86)}==`, INTEGRITY.toLowerCase(), `${INTEGRITY} `, `sha512-${'A'.repeat(85)}-==`),
  junk,
);
export const appNameEdge = fc.oneof(fc.constantFrom('Web', '-x', 'a'.repeat(63), 'a'.repeat(64), '', 'a b'), junk);
export const attemptIdEdge = fc.oneof(fc.constantFrom('a'.repeat(128), 'a'.repeat(129), '.a', '', 'a b'), junk);
// The longest valid version is 128 characters; `1.2.3-` + 122 is one, + 123 is not.
export const versionEdge = fc.oneof(fc.constantFrom('01.2.3', '1.2', '1.2.3+b', `1.2.3-${'x'.repeat(122)}`, `1.2.3-${'x'.repeat(123)}`, ''), junk);
// Integers at a safe-integer rule's edges (0, ±1, ±MAX and one past), fractions, -0 and junk.
// The edges themselves weigh most: a rule's bound moved by one is found only by its edge value.
export const intEdge = fc.oneof({ arbitrary: fc.constantFrom(0, 1, -1, MAX, MAX + 1, -MAX, -MAX - 1, 0.5, -0, NaN, Infinity), weight: 4 }, fc.integer(), junk);

// Through JSON, as a daemon reads a file or a body (undefined keys vanish).
export const throughJson = (v: unknown): unknown => JSON.parse(JSON.stringify(v) ?? 'null');

export interface SchemaLike<T> {
  safeParse(v: unknown): { success: true; data: T } | { success: false };
}

// Recording the golden files of test/golden/ (issue 16): with STEWARD_GOLDEN_RECORD=<folder>,
// each property below that names its `golden` shape also runs its checker over its inputs made
// from a fixed seed (GOLDEN_SEED, as many as its runs), keeps those golden-selection.ts picks,
// adds the hand-picked cases given to recordGolden, and writes every verdict (refused; or
// accepted, with the value returned when it is not the input) to <folder>/<shape>.json when the
// process ends:
//   STEWARD_GOLDEN_RECORD=$PWD/test/golden node scripts/run-tests.js -check.test -checks.test control-answer.test protocol/answer.test
export const GOLDEN_SEED = 16;
const RECORD_DIR = process.env.STEWARD_GOLDEN_RECORD;
interface GoldenCase {
  input: Json;
  accepted: boolean;
  value?: Json;
}
const recorded = new Map<string, { checker: string; cases: GoldenCase[] }>();
if (RECORD_DIR) {
  process.on('exit', () => {
    for (const [shape, { checker, cases }] of recorded) {
      const head = JSON.stringify({ shape, recordedFrom: `${checker}, fast-check seed ${GOLDEN_SEED}`, encoding: 'test/helpers/golden-encoding.ts' }).slice(0, -1);
      // One case a line, so that a change to a verdict is a one-line diff. 'wx': two tests
      // recording one shape would overwrite each other.
      writeFileSync(path.join(RECORD_DIR, `${shape}.json`), `${head},"cases":[\n${cases.map((c) => JSON.stringify(c)).join(',\n')}\n]}\n`, { flag: 'wx' });
    }
  });
}

// Which golden file a property records into, and the checker it records (for the file's header).
export interface Golden {
  shape: string;
  from: string;
}

// Records `check`'s verdict on each of `inputs` as golden cases of `golden.shape` (when recording).
export function recordGolden(golden: Golden, check: (v: unknown) => unknown, inputs: readonly unknown[]): void {
  if (!RECORD_DIR) return;
  const shape = golden.shape;
  let entry = recorded.get(shape);
  if (!entry) recorded.set(shape, (entry = { checker: golden.from, cases: [] }));
  for (const v of inputs) {
    const verdict = check(v);
    const input = encodeGolden(v);
    // The encoded input must get the same verdict as the input itself, or the file says nothing.
    assert.deepEqual(check(decodeGolden(input)), verdict, `${shape}: ${JSON.stringify(input).slice(0, 500)}`);
    // An accepted case without `value` returned its input (deep-equal), as most do.
    if (verdict === null) entry.cases.push({ input, accepted: false });
    else entry.cases.push(isDeepStrictEqual(verdict, v) ? { input, accepted: true } : { input, accepted: true, value: encodeGolden(verdict) });
  }
}

// The inputs of `inputs` (made from GOLDEN_SEED) that a golden file of `check` keeps.
export function goldenInputs(inputs: fc.Arbitrary<unknown>, numRuns: number, check: (v: unknown) => unknown, schema: SchemaLike<unknown>): unknown[] {
  return selectGolden(fc.sample(inputs, { seed: GOLDEN_SEED, numRuns }), (v) => check(v) !== null, schema as Parameters<typeof selectGolden>[2]);
}

// The property: for every input of `inputs`, `check` returns what `schema` returns (deep-equal),
// or null exactly when `schema` refuses. Both verdicts must be reached often enough (at least
// `minAccepted` accepted and at most `maxAccepted`), or the property proves nothing. `golden`
// names the shape whose golden file records a sample of these inputs (see above).
export function assertSameAsSchema<T>(
  check: (v: unknown) => T | null,
  schema: SchemaLike<T>,
  inputs: fc.Arbitrary<unknown>,
  opts: { numRuns: number; minAccepted: number; maxAccepted?: number; golden?: Golden },
): void {
  if (opts.golden && RECORD_DIR) recordGolden(opts.golden, check, goldenInputs(inputs, opts.numRuns, check, schema));
  let accepted = 0;
  fc.assert(
    fc.property(inputs, (v) => {
      const z = schema.safeParse(v);
      const mine = check(v);
      assert.deepEqual(mine, z.success ? z.data : null, String(JSON.stringify(v)).slice(0, 3000));
      if (mine !== null) accepted++;
    }),
    { numRuns: opts.numRuns },
  );
  const max = opts.maxAccepted ?? opts.numRuns;
  assert.ok(accepted >= opts.minAccepted && accepted <= max, `${accepted} of ${opts.numRuns} accepted (wanted ${opts.minAccepted}-${max})`);
}

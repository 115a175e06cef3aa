import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { goldenInputs, recordGolden } from '../helpers/check-arbitraries.js';
import { REASON_CODES } from '../../src/core/errors.js';
import { readAnswer, readProgressEvent } from '../../src/protocol/answer.js';
import { progressEventSchema, responseSchema } from '../../src/protocol/schemas.js';

// The client reads answer lines without zod (answer.ts); these hold its reading to the zod
// schemas of the protocol: the same lines accepted, the same values returned.

// Values as JSON.parse gives them, near the shapes of real lines so both branches are reached.
const id = fc.oneof(fc.constant(null), fc.string({ maxLength: 130 }), fc.integer(), fc.double(), fc.constant(2 ** 53), fc.boolean());
const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const field = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.double(), fc.constant(null), fc.constant(1e999), fc.boolean());
const progress = fc.record(
  { id, event: fc.oneof(fc.constant('progress'), fc.string()), attemptId: field, phase: field, bytes: maybe(field), total: maybe(field), extra: maybe(field) },
  { requiredKeys: [] },
);
const code = fc.oneof(fc.constantFrom(...REASON_CODES), fc.string({ maxLength: 12 }));
const error = fc.oneof(fc.record({ code, message: field, attemptId: maybe(field), extra: maybe(field) }, { requiredKeys: [] }), field, fc.array(field));
const answer = fc.record(
  { id, ok: fc.oneof(fc.boolean(), field), result: maybe(fc.jsonValue()), error: maybe(error), extra: maybe(field) },
  { requiredKeys: [] },
);
// Round-tripped through JSON, as the client sees a line (undefined keys vanish, 1e999 stays Infinity
// only in memory: JSON writes it null).
const asLine = (v: unknown): unknown => JSON.parse(JSON.stringify(v) ?? 'null');
const line = fc.oneof(progress, answer, fc.jsonValue()).map(asLine);

// readAnswer's verdict as responseSchema's value: the line's id with the answer (for the golden file).
const answerValue = (v: unknown) => {
  const a = readAnswer(v);
  return a === null ? null : { id: (v as { id: unknown }).id, ...a };
};

test('readProgressEvent accepts what progressEventSchema accepts and returns what it returns', () => {
  recordGolden({ shape: 'progress-event', from: 'readProgressEvent of src/protocol/answer.ts' }, readProgressEvent, goldenInputs(line, 3000, readProgressEvent, progressEventSchema));
  fc.assert(
    fc.property(line, (v) => {
      const z = progressEventSchema.safeParse(v);
      assert.deepEqual(readProgressEvent(v), z.success ? z.data : null, JSON.stringify(v));
    }),
    { numRuns: 3000 },
  );
});

test('readAnswer accepts what responseSchema accepts and returns what it returns', () => {
  recordGolden({ shape: 'response', from: "readAnswer of src/protocol/answer.ts, with the line's id" }, answerValue, goldenInputs(line, 3000, answerValue, responseSchema));
  fc.assert(
    fc.property(line, (v) => {
      const z = responseSchema.safeParse(v);
      const mine = readAnswer(v);
      assert.equal(mine !== null, z.success, JSON.stringify(v));
      if (!z.success || !mine) return;
      assert.equal(mine.ok, z.data.ok);
      if (mine.ok && z.data.ok) assert.deepEqual(mine.result, z.data.result);
      if (!mine.ok && !z.data.ok) assert.deepEqual(mine.error, z.data.error);
    }),
    { numRuns: 3000 },
  );
});

test('numbers JSON cannot hold are refused in a progress event; ids past 2^53 or 128 characters too', () => {
  const ok = { id: 1, event: 'progress', attemptId: 'a', phase: 'download' };
  assert.deepEqual(readProgressEvent({ ...ok, bytes: 5, junk: 1 }), { ...ok, bytes: 5 });
  assert.equal(readProgressEvent({ ...ok, bytes: Infinity }), null);
  assert.equal(readProgressEvent({ ...ok, id: 2 ** 53 }), null);
  assert.equal(readAnswer({ id: 'x'.repeat(129), ok: true, result: 1 }), null);
  assert.deepEqual(readAnswer({ id: 'x'.repeat(128), ok: false, error: { code: 'BUSY', message: 'm' } }), {
    ok: false,
    error: { code: 'BUSY', message: 'm' },
  });
  assert.equal(readAnswer({ id: 1, ok: false, error: { code: 'NOT_A_CODE', message: 'm' } }), null);
  const events = [{ ...ok, bytes: 5, junk: 1 }, { ...ok, bytes: Infinity }, { ...ok, id: 2 ** 53 }, { ...ok, id: 2 ** 53 - 1 }, { ...ok, id: 1.5 }, { ...ok, id: 'x'.repeat(128) }, { ...ok, id: 'x'.repeat(129) }, { ...ok, id: null }];
  recordGolden({ shape: 'progress-event', from: 'readProgressEvent of src/protocol/answer.ts' }, readProgressEvent, events);
  const answers = [{ id: 'x'.repeat(129), ok: true, result: 1 }, { id: 'x'.repeat(128), ok: false, error: { code: 'BUSY', message: 'm' } }, { id: 1, ok: false, error: { code: 'NOT_A_CODE', message: 'm' } }, { id: 1, ok: true }, { id: null, ok: true, result: null }, { id: null, ok: false, error: { code: 'BUSY', message: 'm', attemptId: 'a' } }, { ok: true, result: 1 }];
  recordGolden({ shape: 'response', from: "readAnswer of src/protocol/answer.ts, with the line's id" }, answerValue, answers);
});

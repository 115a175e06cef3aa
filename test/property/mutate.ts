// Arbitraries for near-valid inputs: a valid JSON value or byte string with a few random edits,
// the inputs a parser sees from a buggy or hostile client more often than pure noise. An edit
// is drawn as plain numbers and JSON (so fast-check shrinks it) and applied to a fresh copy.
import fc from 'fast-check';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

// Values worth trying in any slot: wrong types, edge numbers, strings near the limits.
const nasty: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1, 1.5, -0, 2 ** 53, -(2 ** 53), 1e308, '', '0', 'web', '1.0.0', '__proto__', 'constructor', [], {}),
  fc.constantFrom('a'.repeat(129), 'é'.repeat(70), '\u0000', '\n', '../x', '/etc/passwd', 'A'.repeat(4097)),
  // Valid names and versions other than the ones configured: they pass schemas and reach handlers.
  fc.constantFrom('api', 'web-2', 'a'.repeat(63), '0.0.1', '2.0.0', '1.2.0-rc.1', 'cli-9'),
  fc.string({ maxLength: 12 }),
  fc.integer(),
  fc.double(),
  fc.jsonValue({ maxDepth: 2 }),
);

export interface JsonEdit {
  kind: number;
  at: number;
  key: string;
  value: unknown;
  n: number;
}

const editArb: fc.Arbitrary<JsonEdit> = fc.record({
  kind: fc.nat(7),
  at: fc.nat(),
  key: fc.oneof(fc.constantFrom('op', 'v', 'id', 'app', 'version', 'upload', 'manifest', 'path', 'allowUnsigned', 'to', 'payload', 'sig', 'keyId', 'seq', '__proto__'), fc.string({ maxLength: 8 })),
  value: nasty,
  n: fc.integer({ min: -3, max: 3 }),
});

// Every container path and leaf path of a JSON value, depth-first.
function slots(v: unknown, at: Array<string | number> = [], out: Array<Array<string | number>> = []): Array<Array<string | number>> {
  out.push(at);
  if (Array.isArray(v)) v.forEach((x, i) => slots(x, [...at, i], out));
  else if (v && typeof v === 'object') for (const k of Object.keys(v)) slots((v as Record<string, unknown>)[k], [...at, k], out);
  return out;
}

function getAt(v: unknown, p: Array<string | number>): unknown {
  let cur = v;
  for (const k of p) cur = (cur as Record<string | number, unknown>)[k];
  return cur;
}

function setAt(root: unknown, p: Array<string | number>, value: unknown): unknown {
  if (p.length === 0) return value;
  const parent = getAt(root, p.slice(0, -1)) as Record<string | number, unknown>;
  // defineProperty, not assignment: a key "__proto__" must become an own property, as JSON.parse makes it.
  Object.defineProperty(parent, p[p.length - 1] as string | number, { value, enumerable: true, writable: true, configurable: true });
  return root;
}

function editString(s: string, e: JsonEdit): string {
  const i = s.length === 0 ? 0 : e.at % (s.length + 1);
  switch (e.n) {
    case -3:
      return s.slice(0, i);
    case -2:
      return s.slice(0, i) + s.slice(i + 1);
    case -1:
      return s.slice(0, i) + String.fromCharCode((s.charCodeAt(i) || 0x41) ^ (1 << e.at % 7)) + s.slice(i + 1);
    case 0:
      return s.toUpperCase();
    case 1:
      return s.slice(0, i) + (typeof e.value === 'string' ? e.value : String(e.value)) + s.slice(i);
    case 2:
      return s + s;
    default:
      return ' ' + s;
  }
}

// Applies one edit to a copy-in-place value; returns the new root.
export function applyEdit(root: unknown, e: JsonEdit): unknown {
  const all = slots(root);
  const p = all[e.at % all.length] as Array<string | number>;
  const target = getAt(root, p);
  switch (e.kind) {
    case 0: // replace the slot with another value
      return setAt(root, p, structuredClone(e.value));
    case 1: // delete the slot (or empty the root)
      if (p.length === 0) return {};
      {
        const parent = getAt(root, p.slice(0, -1));
        if (Array.isArray(parent)) parent.splice(p[p.length - 1] as number, 1);
        else delete (parent as Record<string, unknown>)[p[p.length - 1] as string];
      }
      return root;
    case 2: // add a key to an object, or an element to an array
      if (Array.isArray(target)) target.push(structuredClone(e.value));
      else if (target && typeof target === 'object') setAt(root, [...p, e.key], structuredClone(e.value));
      else return setAt(root, p, { [e.key]: target });
      return root;
    case 3: // edit a string, or turn the slot into a string
      return setAt(root, p, typeof target === 'string' ? editString(target, e) : JSON.stringify(target) ?? '');
    case 4: // nudge a number, or turn the slot into one
      return setAt(root, p, typeof target === 'number' ? [target + 1, target - 1, target + e.n, -target, target / 3, target * 2 ** 40, 2 ** 53, NaN][e.at % 8] : e.n);
    case 5: // wrap the slot in an array
      return setAt(root, p, [target]);
    case 6: // copy another slot here
      return setAt(root, p, structuredClone(getAt(root, all[(e.at >>> 3) % all.length] as Array<string | number>)));
    default: // flip a boolean, or null the slot
      return setAt(root, p, typeof target === 'boolean' ? !target : null);
  }
}

// `base` with 1..maxEdits edits applied (JSON-compatible; NaN becomes null on stringify).
export function mutatedJson<T>(base: T | fc.Arbitrary<T>, maxEdits = 3): fc.Arbitrary<unknown> {
  const baseArb = base instanceof fc.Arbitrary ? (base as fc.Arbitrary<T>) : fc.constant(base as T);
  return fc.tuple(baseArb, fc.array(editArb, { minLength: 1, maxLength: maxEdits })).map(([b, edits]) => {
    let v: unknown = structuredClone(b);
    for (const e of edits) v = applyEdit(v, e);
    return v;
  });
}

export interface ByteEdit {
  kind: number;
  at: number;
  byte: number;
  len: number;
}

const byteEditArb: fc.Arbitrary<ByteEdit> = fc.record({ kind: fc.nat(5), at: fc.nat(), byte: fc.nat(255), len: fc.nat(16) });

export function applyByteEdit(b: Buffer, e: ByteEdit): Buffer {
  // Buffer.concat copies: the base is never edited in place.
  const i = b.length === 0 ? 0 : e.at % (b.length + 1);
  switch (e.kind) {
    case 0: // flip one bit
      if (b.length === 0) return Buffer.from([e.byte]);
      return Buffer.concat([b.subarray(0, i % b.length), Buffer.from([(b[i % b.length] as number) ^ (1 << e.byte % 8)]), b.subarray((i % b.length) + 1)]);
    case 1: // insert a byte
      return Buffer.concat([b.subarray(0, i), Buffer.from([e.byte]), b.subarray(i)]);
    case 2: // delete a run
      return Buffer.concat([b.subarray(0, i), b.subarray(i + 1 + e.len)]);
    case 3: // duplicate a run
      return Buffer.concat([b.subarray(0, i + e.len), b.subarray(i, i + e.len), b.subarray(i + e.len)]);
    case 4: // truncate
      return b.subarray(0, i);
    default: // overwrite a byte with one of the JSON-significant ones
      return Buffer.concat([b.subarray(0, i), Buffer.from('{}[]",:\\\n \u0000'.charAt(e.byte % 12)), b.subarray(i + 1)]);
  }
}

// `base` bytes with 1..maxEdits byte-level edits.
export function mutatedBytes(base: Buffer | fc.Arbitrary<Buffer>, maxEdits = 4): fc.Arbitrary<Buffer> {
  const baseArb = Buffer.isBuffer(base) ? fc.constant(base) : base;
  return fc.tuple(baseArb, fc.array(byteEditArb, { minLength: 1, maxLength: maxEdits })).map(([b, edits]) => {
    let out: Buffer = Buffer.from(b);
    for (const e of edits) out = applyByteEdit(out, e);
    return out;
  });
}

// A JSON text: valid JSON mutated structurally, then sometimes at the byte level too.
// One edit most often: the further from valid, the sooner the schema stops it.
export function nearValidJsonBytes<T>(base: T | fc.Arbitrary<T>): fc.Arbitrary<Buffer> {
  const text = (v: unknown) => Buffer.from(JSON.stringify(v) ?? 'null');
  const oneEdit = mutatedJson(base, 1).map(text);
  return fc.oneof({ weight: 4, arbitrary: oneEdit }, { weight: 2, arbitrary: mutatedJson(base, 3).map(text) }, { weight: 1, arbitrary: mutatedBytes(oneEdit, 2) });
}

export type { Json };

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

// Base64 text with one character swapped for another of the alphabet, often the last one before
// the padding: whose low bits are padding, so that a decoder that does not insist on canonical
// text reads the same bytes from a different string.
export function base64TextEdit(text: string): fc.Arbitrary<string> {
  const data = text.replace(/=+$/, '').length;
  return fc.tuple(fc.oneof(fc.constant(data - 1), fc.nat(data - 1)), fc.nat(63)).map(([i, j]) => text.slice(0, i) + B64[j] + text.slice(i + 1));
}

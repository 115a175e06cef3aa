// Canonical JSON of docs/design.md §6: object keys sorted by code point at every level,
// no whitespace, UTF-8. Only strings, booleans, null, safe integers, arrays and
// plain objects are allowed; anything else is a programming error.
export function canonicalJson(value: unknown): string {
  return encode(value, 0);
}

// The canonical JSON as UTF-8 bytes, the P of the signature envelope.
export function canonicalBytes(value: unknown): Buffer {
  return Buffer.from(canonicalJson(value), 'utf8');
}

function compareCodePoints(a: string, b: string): number {
  // Sort by Unicode code point, not UTF-16 code unit, so astral characters order as in UTF-8.
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const cx = x.value.codePointAt(0) ?? 0;
    const cy = y.value.codePointAt(0) ?? 0;
    if (cx !== cy) return cx - cy;
  }
}

function encode(value: unknown, depth: number): string {
  if (depth > 64) throw new TypeError('canonical JSON: nesting deeper than 64');
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isSafeInteger(value)) throw new TypeError(`canonical JSON: ${value} is not a safe integer`);
      return String(value);
    case 'object': {
      if (Array.isArray(value)) return '[' + value.map((v) => encode(v, depth + 1)).join(',') + ']';
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) throw new TypeError('canonical JSON: only plain objects');
      const keys = Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined);
      keys.sort(compareCodePoints);
      return (
        '{' +
        keys.map((k) => JSON.stringify(k) + ':' + encode((value as Record<string, unknown>)[k], depth + 1)).join(',') +
        '}'
      );
    }
    default:
      throw new TypeError(`canonical JSON: ${typeof value} is not allowed`);
  }
}

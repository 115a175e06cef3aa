// The golden files of test/golden/ hold inputs that JSON cannot: an own key holding undefined,
// NaN and -0, an object without a prototype or with an inherited key, a class instance, a symbol
// or hidden key, a Date, a Map; and long strings and arrays that would make the files large.
// Each value is written as JSON, the rare ones as a tagged object {"$t": tag, ...}:
//   - null, booleans, finite numbers other than -0, and strings: themselves, except a string of
//     more than 64 UTF-16 units with a run of 8 or more of one unit in it, which is
//     {"$t":"string","pieces":[[text, times]...]} (each run one piece, the text between runs once);
//   - NaN, Infinity, -Infinity, -0: {"$t":"number","v":"NaN"};  undefined: {"$t":"undefined"};
//   - an array: its elements, a run of 3 or more equal ones as one element {"$t":"repeat","v",n},
//     a run of 3 or more integers counting up by one as one element {"$t":"count","from","n"};
//   - a plain object (Object.prototype, string keys only, all enumerable): itself, values encoded,
//     a key that starts with "$" written with one more "$" in front (so "$t" never is a key);
//     an own "__proto__" key stays an own key;
//   - any other object: {"$t":"object","proto","own","hidden","symbols"}, where proto is null,
//     "Object", {"$t":"class","name"} (an instance of a class of that name) or the prototype object;
//     a Date {"$t":"date","v":ms}; a Map {"$t":"map","entries":[[k,v]...]}.
// Anything else (a function, a bigint, a symbol value, a getter) is refused, loudly.

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const put = (o: object, key: string, value: unknown): void => {
  // defineProperty, never `o[key] =`: an own "__proto__" key must stay a key, not a prototype.
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
};

// `s` as [text, times] pieces: each run of 8 or more of one UTF-16 unit is one piece, the text
// between runs a piece of its own, once.
function piecesOf(s: string): [string, number][] {
  const pieces: [string, number][] = [];
  let literal = '';
  for (let i = 0; i < s.length; ) {
    let n = 1;
    while (s[i + n] === s[i]) n++;
    if (n >= 8) {
      if (literal) pieces.push([literal, 1]);
      literal = '';
      pieces.push([s[i] as string, n]);
    } else literal += s.slice(i, i + n);
    i += n;
  }
  if (literal) pieces.push([literal, 1]);
  return pieces;
}

function isPlain(o: object): boolean {
  if (Object.getPrototypeOf(o) !== Object.prototype) return false;
  if (Object.getOwnPropertySymbols(o).length) return false;
  return Object.getOwnPropertyNames(o).every((k) => {
    const d = Object.getOwnPropertyDescriptor(o, k) as PropertyDescriptor;
    return d.enumerable && 'value' in d;
  });
}

function encodeEntries(o: object, keys: string[]): { [k: string]: Json } {
  const out = {};
  for (const k of keys) {
    const d = Object.getOwnPropertyDescriptor(o, k) as PropertyDescriptor;
    if (!('value' in d)) throw new Error(`golden encoding: a getter at ${k}`);
    put(out, k.startsWith('$') ? `$${k}` : k, encodeGolden(d.value));
  }
  return out;
}

// `v` as JSON, as described above.
export function encodeGolden(v: unknown): Json {
  if (v === undefined) return { $t: 'undefined' };
  if (v === null || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) && !Object.is(v, -0) ? v : { $t: 'number', v: Object.is(v, -0) ? '-0' : String(v) };
  if (typeof v === 'string') {
    if (v.length <= 64) return v;
    const pieces = piecesOf(v);
    return pieces.length > 1 || pieces[0]?.[1] !== 1 ? { $t: 'string', pieces } : v;
  }
  if (typeof v !== 'object') throw new Error(`golden encoding: a ${typeof v}`);
  if (Array.isArray(v)) {
    if (Object.getPrototypeOf(v) !== Array.prototype || Object.keys(v).length !== v.length) throw new Error('golden encoding: an odd array');
    const out: Json[] = [];
    for (let i = 0; i < v.length; i++) {
      if (!(i in v)) throw new Error('golden encoding: a sparse array');
      const e = encodeGolden(v[i]);
      const text = JSON.stringify(e);
      let n = 1;
      while (i + n < v.length && JSON.stringify(encodeGolden(v[i + n])) === text) n++;
      let up = 1;
      while (Number.isSafeInteger(v[i]) && !Object.is(v[i], -0) && v[i + up] === (v[i] as number) + up) up++;
      if (n >= 3) {
        out.push({ $t: 'repeat', v: e, n });
        i += n - 1;
      } else if (up >= 3) {
        out.push({ $t: 'count', from: v[i] as number, n: up });
        i += up - 1;
      } else out.push(e);
    }
    return out;
  }
  if (v instanceof Date) return { $t: 'date', v: v.getTime() };
  if (v instanceof Map) return { $t: 'map', entries: [...v.entries()].map(([k, x]) => [encodeGolden(k), encodeGolden(x)]) };
  if (isPlain(v)) return encodeEntries(v, Object.keys(v));
  const proto = Object.getPrototypeOf(v) as object | null;
  let p: Json;
  if (proto === null || proto === Object.prototype) p = proto === null ? null : 'Object';
  else if (Object.hasOwn(proto, 'constructor') && typeof (proto as { constructor: unknown }).constructor === 'function') {
    if (Object.getOwnPropertyNames(proto).length !== 1 || Object.getPrototypeOf(proto) !== Object.prototype) throw new Error('golden encoding: a class with members');
    p = { $t: 'class', name: (proto as { constructor: { name: string } }).constructor.name };
  } else p = encodeGolden(proto);
  const names = Object.getOwnPropertyNames(v);
  const symbols = Object.getOwnPropertySymbols(v).map((s): Json => {
    const d = Object.getOwnPropertyDescriptor(v, s) as PropertyDescriptor;
    if (!d.enumerable || !('value' in d)) throw new Error('golden encoding: an odd symbol key');
    return [s.description ?? '', encodeGolden(d.value)];
  });
  return {
    $t: 'object',
    proto: p,
    own: encodeEntries(v, names.filter((k) => Object.prototype.propertyIsEnumerable.call(v, k))),
    hidden: encodeEntries(v, names.filter((k) => !Object.prototype.propertyIsEnumerable.call(v, k))),
    symbols,
  };
}

function decodeEntries(into: object, o: { [k: string]: Json }, enumerable = true): object {
  for (const k of Object.keys(o)) {
    const value = decodeGolden(o[k] as Json);
    const key = k.startsWith('$') ? k.slice(1) : k;
    if (enumerable) put(into, key, value);
    else Object.defineProperty(into, key, { value, enumerable: false });
  }
  return into;
}

// The value `j` (encodeGolden's output) stands for; every object and array is a fresh one.
export function decodeGolden(j: Json): unknown {
  if (j === null || typeof j !== 'object') return j;
  if (Array.isArray(j)) {
    const out: unknown[] = [];
    for (const e of j) {
      const tag = e !== null && typeof e === 'object' && !Array.isArray(e) ? e.$t : undefined;
      if (tag === 'repeat') for (let i = 0; i < (e as { n: number }).n; i++) out.push(decodeGolden((e as { v: Json }).v));
      else if (tag === 'count') for (let i = 0; i < (e as { n: number }).n; i++) out.push((e as { from: number }).from + i);
      else out.push(decodeGolden(e));
    }
    return out;
  }
  if (!Object.hasOwn(j, '$t')) return decodeEntries({}, j);
  switch (j.$t) {
    case 'undefined':
      return undefined;
    case 'number':
      return j.v === '-0' ? -0 : Number(j.v);
    case 'string':
      return (j.pieces as [string, number][]).map(([u, n]) => u.repeat(n)).join('');
    case 'date':
      return new Date(j.v as number);
    case 'map':
      return new Map((j.entries as [Json, Json][]).map(([k, v]) => [decodeGolden(k), decodeGolden(v)]));
    case 'object': {
      const p = j.proto;
      let proto: object | null;
      if (p === null) proto = null;
      else if (p === 'Object') proto = Object.prototype;
      else if (typeof p === 'object' && !Array.isArray(p) && p.$t === 'class') {
        // A class of that name, made here: its prototype is not a plain object's.
        const name = p.name as string;
        proto = ({ [name]: class {} } as Record<string, new () => object>)[name]!.prototype as object;
      } else proto = decodeGolden(p as Json) as object;
      const o = Object.create(proto) as object;
      decodeEntries(o, j.own as { [k: string]: Json });
      decodeEntries(o, j.hidden as { [k: string]: Json }, false);
      for (const [desc, v] of j.symbols as [string, Json][]) Object.defineProperty(o, Symbol(desc), { value: decodeGolden(v), enumerable: true, writable: true, configurable: true });
      return o;
    }
    default:
      throw new Error(`golden decoding: unknown tag ${String(j.$t)}`);
  }
}

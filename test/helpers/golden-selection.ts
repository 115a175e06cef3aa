// Which inputs of a property test go into its golden file (check-arbitraries.ts recordGolden):
// every run would make files of megabytes, and a plain sample misses most single edges (the
// property tests move one field of a valid value to the edge of its rule, so each edge is a
// small share of the runs). Kept: one input in BASELINE, and each input that shows something no
// kept input showed before, which is
//   - for a refused input, each issue its schema reports (its path, code, and message, but not
//     the keys an unknown-keys message names, nor the type an invalid-type one says it
//     received, but the kind of value there), an issue that is the only one counting apart, and
//     a bound missed by one (a number, a length one past it) apart from one missed by more: each
//     rule that refuses is kept where it refuses alone, and where it only refuses beside another;
//   - for an accepted input, a leaf's path and kind (a number is an integer, a fraction, -0 or
//     unsafe), and the smallest and the largest number, string length and array length at each
//     path among the accepted inputs: each bound is kept from the side that is accepted. Only
//     paths that one accepted input in COMMON holds count: the schema's fields, not the
//     generated keys of a loose object or a record; and such a path that is absent (an
//     optional field left out) where its parent is there.
// A key that fewer than RECUR inputs hold under the same parent (a generated name) counts as
// '*', an array index as '#'. Deterministic: the same inputs keep the same ones.

const BASELINE = 25;
const RECUR = 3;
const COMMON = 20;

interface Issue {
  path: PropertyKey[];
  code: string;
  message: string;
  minimum?: number | bigint;
  maximum?: number | bigint;
}
interface SchemaLike {
  safeParse(v: unknown): { success: true } | { success: false; error: { issues: readonly Issue[] } };
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const seg of path) v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[seg] : undefined;
  return v;
}

// What the value at `path` is: a fraction and an unsafe integer are both "not an int", and each
// must be kept.
function kindAt(input: unknown, path: readonly PropertyKey[]): string {
  const v = valueAt(input, path);
  return typeof v === 'number' ? numberKind(v) : Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v;
}

// Whether `issue` is a bound that the value at its path misses by exactly one.
function justPast(input: unknown, issue: Issue): boolean {
  const v = valueAt(input, issue.path);
  const size = typeof v === 'number' ? v : typeof v === 'string' || Array.isArray(v) ? v.length : undefined;
  if (size === undefined) return false;
  if (issue.code === 'too_big') return size === Number(issue.maximum) + 1;
  if (issue.code === 'too_small') return size === Number(issue.minimum) - 1;
  return false;
}

interface Leaf {
  path: string[];
  kind: string;
  // A number's value, a string's or an array's length.
  size?: number;
}

function numberKind(n: number): string {
  if (Object.is(n, -0)) return 'number -0';
  if (!Number.isFinite(n)) return `number ${n}`;
  if (!Number.isInteger(n)) return 'number fraction';
  return Number.isSafeInteger(n) ? 'number integer' : 'number unsafe';
}

function leavesOf(v: unknown, path: string[], out: Leaf[]): Leaf[] {
  if (typeof v === 'number') out.push({ path, kind: numberKind(v), size: v });
  else if (typeof v === 'string') out.push({ path, kind: 'string', size: v.length });
  else if (Array.isArray(v)) {
    out.push({ path, kind: 'array', size: v.length });
    for (const e of v.slice(0, 8)) leavesOf(e, [...path, '#'], out);
  } else if (v !== null && typeof v === 'object') {
    const proto = Object.getPrototypeOf(v) as unknown;
    out.push({ path, kind: proto === Object.prototype ? 'object' : proto === null ? 'null-proto object' : 'odd object' });
    for (const k of Object.keys(v)) leavesOf((v as Record<string, unknown>)[k], [...path, k], out);
  } else out.push({ path, kind: String(v) });
  return out;
}

// The inputs of `inputs` to record, in their order; `accepted(v)` is the checker's verdict.
export function selectGolden(inputs: readonly unknown[], accepted: (v: unknown) => boolean, schema: SchemaLike): unknown[] {
  const leaves = inputs.map((v) => leavesOf(v, [], []));
  const verdicts = inputs.map(accepted);
  // Paths normalized a level at a time: how many inputs hold each key under its normalized parent.
  const normOf = new Map<string, string>([['[]', '']]);
  const holders = new Map<string, number>();
  const depth = Math.max(0, ...leaves.flat().map((l) => l.path.length));
  for (let d = 1; d <= depth; d++) {
    for (const ls of leaves) {
      const here = new Set<string>();
      for (const l of ls) if (l.path.length >= d) here.add(`${normOf.get(JSON.stringify(l.path.slice(0, d - 1)))}\u0000${l.path[d - 1]}`);
      for (const k of here) holders.set(k, (holders.get(k) ?? 0) + 1);
    }
    for (const ls of leaves) {
      for (const l of ls) {
        if (l.path.length < d) continue;
        const parent = normOf.get(JSON.stringify(l.path.slice(0, d - 1))) as string;
        const seg = l.path[d - 1] as string;
        const kept = seg === '#' || (holders.get(`${parent}\u0000${seg}`) ?? 0) >= RECUR;
        normOf.set(JSON.stringify(l.path.slice(0, d)), `${parent}.${kept ? seg : '*'}`);
      }
    }
  }
  const norm = (path: readonly PropertyKey[]): string => {
    let out = '';
    for (let i = 0; i < path.length; i++) {
      const raw = JSON.stringify(path.slice(0, i + 1).map((s) => (typeof s === 'number' ? '#' : String(s))));
      const known = normOf.get(raw);
      // A key no input holds (a required one missing) is the schema's own name: kept.
      out = known ?? `${out}.${typeof path[i] === 'number' ? '#' : String(path[i])}`;
    }
    return out;
  };
  // How many accepted inputs hold each normalized path; the smallest and largest size at each
  // normalized path and kind among them.
  const held = new Map<string, number>();
  leaves.forEach((ls, i) => {
    if (verdicts[i]) for (const k of new Set(ls.map((l) => norm(l.path)))) held.set(k, (held.get(k) ?? 0) + 1);
  });
  const common = (path: string[]) => (held.get(norm(path)) ?? 0) * COMMON >= verdicts.filter(Boolean).length;
  const bounds = new Map<string, [number, number]>();
  leaves.forEach((ls, i) => {
    if (!verdicts[i]) return;
    for (const l of ls.filter((x) => common(x.path))) {
      if (l.size === undefined || !Number.isFinite(l.size)) continue;
      const k = `${norm(l.path)} ${l.kind}`;
      const b = bounds.get(k);
      bounds.set(k, b ? [Math.min(b[0], l.size), Math.max(b[1], l.size)] : [l.size, l.size]);
    }
  });
  const seen = new Set<string>();
  const kept: unknown[] = [];
  inputs.forEach((v, i) => {
    const features: string[] = [];
    if (verdicts[i]) {
      const here = new Set<string>();
      for (const l of (leaves[i] as Leaf[]).filter((x) => common(x.path))) {
        const k = `${norm(l.path)} ${l.kind}`;
        here.add(norm(l.path));
        features.push(`A ${k}`);
        const b = bounds.get(k);
        if (b && l.size === b[0]) features.push(`A ${k} smallest`);
        if (b && l.size === b[1]) features.push(`A ${k} largest`);
      }
      // A common key this input lacks under a parent it has (an optional field left out).
      for (const k of held.keys()) {
        const parent = k.slice(0, k.lastIndexOf('.'));
        if (!here.has(k) && here.has(parent) && (held.get(k) ?? 0) * COMMON >= verdicts.filter(Boolean).length) features.push(`A ${k} absent`);
      }
    } else {
      const r = schema.safeParse(v);
      const issues = (r.success ? [] : r.error.issues).map((issue) => {
        const rule = issue.code === 'unrecognized_keys' ? '' : issue.message.replace(/, received \S+$/, '');
        return `${norm(issue.path)} ${issue.code} ${rule}${justPast(v, issue) ? ' (by one)' : ''} (${kindAt(v, issue.path)})`;
      });
      const alone = new Set(issues).size === 1;
      for (const issue of issues) features.push(`R ${alone ? 'alone' : 'beside others'} ${issue}`);
    }
    const fresh = features.filter((f) => !seen.has(f));
    for (const f of fresh) seen.add(f);
    if (fresh.length || i % BASELINE === 0) kept.push(v);
  });
  return kept;
}

// Versions are semver without build metadata (docs/design.md §1), checked before any
// path is built from one.
export const VERSION_RE = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$/;
export const MAX_VERSION_LENGTH = 128;

// Whether a string is a valid version.
export function isVersion(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_VERSION_LENGTH && VERSION_RE.test(value);
}

function compareIdentifiers(a: string, b: string): number {
  const na = /^\d+$/.test(a);
  const nb = /^\d+$/.test(b);
  if (na && nb) return compareNumeric(a, b);
  if (na) return -1;
  if (nb) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareNumeric(a: string, b: string): number {
  // Compare digit strings without Number() so huge components keep their order.
  const x = a.replace(/^0+(?=\d)/, '');
  const y = b.replace(/^0+(?=\d)/, '');
  if (x.length !== y.length) return x.length - y.length;
  return x < y ? -1 : x > y ? 1 : 0;
}

// Semver precedence: negative when a < b, zero when equal, positive when a > b.
export function compareVersions(a: string, b: string): number {
  const ma = VERSION_RE.exec(a);
  const mb = VERSION_RE.exec(b);
  if (!ma || !mb) throw new TypeError(`not a version: ${!ma ? a : b}`);
  for (let i = 1; i <= 3; i++) {
    const c = compareNumeric(ma[i] as string, mb[i] as string);
    if (c !== 0) return Math.sign(c);
  }
  const pa = ma[4]?.slice(1);
  const pb = mb[4]?.slice(1);
  if (pa === undefined) return pb === undefined ? 0 : 1;
  if (pb === undefined) return -1;
  const ia = pa.split('.');
  const ib = pb.split('.');
  for (let i = 0; i < Math.max(ia.length, ib.length); i++) {
    if (ia[i] === undefined) return -1;
    if (ib[i] === undefined) return 1;
    const c = compareIdentifiers(ia[i] as string, ib[i] as string);
    if (c !== 0) return Math.sign(c);
  }
  return 0;
}

// The release shapes the helper reads on its start, on every supervisor pass and on every update,
// checked without zod (issue 8, row 5: zod alone is ~11 MB of the helper's RSS): the
// `.steward-valid` marker, steward-release.json and the signed manifest's payload. Each checker
// accepts exactly what its schema of release-schemas.ts accepts and returns what it would,
// defaults filled in (test/core/release-check.test.ts holds each to its schema both ways); the
// schema, loaded only then, words a refusal (core/checker.ts refusalOf).
import type { Checker } from './checker.js';
import { isObject, isPlainObject, type Obj } from './json-checks.js';
import { APP_NAME_RE, INTEGRITY_RE, isLoopbackHost } from './name-checks.js';
import type { ManifestPayload, Marker, ReleaseFile } from './release-schemas.js';
import { isVersion } from './version.js';

export const RELEASE_FILE_NAME = 'steward-release.json';
export const MARKER_FILE_NAME = '.steward-valid';
export const MARKER_SCHEMA_VERSION = 1;
export const ENV_KEY_RE = /^[A-Z_][A-Z0-9_]{0,127}$/;

const KEY_ID_RE = /^[0-9a-f]{16}$/;
const TREE_DIGEST_RE = /^sha256-[A-Za-z0-9+/]{43}=$/;

// health.http's rule (releaseFileSchema's refine calls this same function): a URL that parses,
// plain http, a loopback host, no credentials.
export function isLoopbackHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return u.protocol === 'http:' && isLoopbackHost(u.hostname) && u.username === '' && u.password === '';
  } catch {
    return false;
  }
}

// health.tcp's rule (releaseFileSchema's refine calls this same function): loopback host:port,
// the port 1..65535.
export function isLoopbackHostPort(v: string): boolean {
  const m = /^(.+):(\d{1,5})$/.exec(v);
  return !!m && isLoopbackHost(m[1] as string) && Number(m[2]) > 0 && Number(m[2]) < 65536;
}

// Thrown inside a check when a value is refused; the exported checks turn it into null.
class Refused extends Error {}
const refused = (): never => {
  throw new Refused();
};
function orNull<T>(check: (v: unknown) => T): (v: unknown) => T | null {
  return (v) => {
    try {
      return check(v);
    } catch (err) {
      if (err instanceof Refused) return null;
      throw err;
    }
  };
}

// z.strictObject's input: an object (not an array) whose every key, as `for...in` lists them
// (own or inherited, enumerable; an own "__proto__" too), is one of `keys`.
function strict(v: unknown, keys: readonly string[]): Obj {
  if (!isObject(v)) return refused();
  for (const k in v) if (!keys.includes(k)) refused();
  return v;
}

// z.string().min(min).max(max): lengths in UTF-16 code units.
function str(v: unknown, min: number, max: number): string {
  return typeof v === 'string' && v.length >= min && v.length <= max ? v : refused();
}
// z.string().regex(re).
function matching(v: unknown, re: RegExp): string {
  return typeof v === 'string' && re.test(v) ? v : refused();
}
// z.number().int().min(min).max(max): .int() takes safe integers only.
function int(v: unknown, min: number, max: number): number {
  return Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max ? (v as number) : refused();
}
const version = (v: unknown): string => (isVersion(v) ? v : refused());
const MAX = Number.MAX_SAFE_INTEGER;

// markerSchema: the `.steward-valid` marker.
function marker(v: unknown): Marker {
  const o = strict(v, ['schemaVersion', 'tarballIntegrity', 'treeDigest', 'signed', 'keyId', 'version', 'stagedAt']);
  if (o.schemaVersion !== MARKER_SCHEMA_VERSION) refused();
  const tarballIntegrity = matching(o.tarballIntegrity, INTEGRITY_RE);
  const treeDigest = matching(o.treeDigest, TREE_DIGEST_RE);
  if (typeof o.signed !== 'boolean') refused();
  const keyId = o.keyId === null ? null : matching(o.keyId, KEY_ID_RE);
  return { schemaVersion: MARKER_SCHEMA_VERSION, tarballIntegrity, treeDigest, signed: o.signed as boolean, keyId, version: version(o.version), stagedAt: int(o.stagedAt, 0, MAX) };
}

// manifestPayloadSchema: the signed manifest's payload.
function manifest(v: unknown): ManifestPayload {
  const o = strict(v, ['name', 'version', 'url', 'size', 'integrity', 'expires']);
  return {
    name: matching(o.name, APP_NAME_RE),
    version: version(o.version),
    url: str(o.url, 1, 4096),
    size: int(o.size, 1, MAX),
    integrity: matching(o.integrity, INTEGRITY_RE),
    expires: int(o.expires, 0, MAX),
  };
}

// start.env: z.record(key regex, value). The record takes a plain object, reads its own
// enumerable keys, skips a "__proto__" key whatever its value (zod never writes one into its
// result), refuses a symbol key and every key or value that breaks its rule.
function env(v: unknown): Record<string, string> {
  if (!isPlainObject(v)) return refused();
  const out: Record<string, string> = {};
  for (const key of Reflect.ownKeys(v)) {
    if (key === '__proto__' || !Object.prototype.propertyIsEnumerable.call(v, key)) continue;
    if (typeof key !== 'string' || !ENV_KEY_RE.test(key)) refused();
    const value = str(v[key as string], 0, 4096);
    if (Buffer.byteLength(value, 'utf8') > 4096 || /[\0\n\r]/.test(value)) refused();
    out[key as string] = value;
  }
  return out;
}

function start(v: unknown): NonNullable<ReleaseFile['start']> {
  const o = strict(v, ['command', 'env']);
  const c = o.command;
  if (!Array.isArray(c) || c.length < 1 || c.length > 256) refused();
  const command: string[] = [];
  for (let i = 0; i < (c as unknown[]).length; i++) {
    const arg = str((c as unknown[])[i], 1, 4096);
    if (arg.includes('\0')) refused();
    command.push(arg);
  }
  // .default({}): an absent (or undefined) env is {}.
  return { command, env: o.env === undefined ? {} : env(o.env) };
}

function health(v: unknown): NonNullable<ReleaseFile['health']> {
  const o = strict(v, ['http', 'tcp', 'timeoutMs', 'stableMs']);
  const out: Obj = {};
  // .optional(): a key that is there stays, undefined included; an absent one stays absent.
  if ('http' in o) out.http = o.http === undefined ? undefined : isLoopbackHttpUrl(str(o.http, 0, 2048)) ? o.http : refused();
  if ('tcp' in o) out.tcp = o.tcp === undefined ? undefined : isLoopbackHostPort(str(o.tcp, 0, 256)) ? o.tcp : refused();
  out.timeoutMs = o.timeoutMs === undefined ? 30_000 : int(o.timeoutMs, 1, 3_600_000);
  out.stableMs = o.stableMs === undefined ? 5_000 : int(o.stableMs, 0, 3_600_000);
  if (out.http && out.tcp) refused();
  return out as NonNullable<ReleaseFile['health']>;
}

// releaseFileSchema: steward-release.json.
function releaseFile(v: unknown): ReleaseFile {
  const o = strict(v, ['name', 'version', 'start', 'health']);
  const out: Obj = { name: matching(o.name, APP_NAME_RE), version: version(o.version) };
  if ('start' in o) out.start = o.start === undefined ? undefined : start(o.start);
  if ('health' in o) out.health = o.health === undefined ? undefined : health(o.health);
  return out as ReleaseFile;
}

export const checkMarker = orNull(marker);
export const checkManifestPayload = orNull(manifest);
export const checkReleaseFileShape = orNull(releaseFile);

// The checkers, module-level constants: parse-cache.ts keys kept checks by them.
export const markerChecker: Checker<Marker> = {
  check: checkMarker,
  schema: async () => (await import('./release-schemas.js')).markerSchema,
};
export const releaseFileChecker: Checker<ReleaseFile> = {
  check: checkReleaseFileShape,
  schema: async () => (await import('./release-schemas.js')).releaseFileSchema,
};
export const manifestPayloadChecker: Checker<ManifestPayload> = {
  check: checkManifestPayload,
  schema: async () => (await import('./release-schemas.js')).manifestPayloadSchema,
};

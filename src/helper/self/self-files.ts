import path from 'node:path';
import type { HostPaths } from '../../core/paths.js';
import type { Schema } from '../../core/must-parse.js';
import {
  packageTriedLine,
  packageTriedSchema,
  pointerLine,
  pointerSchema,
  SELF_SCHEMA_VERSION,
  startRecordLine,
  startRecordSchema,
  type PackageTried,
  type Pointer,
  type SelfFile,
  type StartRecord,
} from '../../core/self-schemas.js';
import { readFileNoFollow } from '../../platform/fs-atomic.js';

// What one file of self/ holds. Reading never throws on its content (docs/design.md §16: a newer or
// unreadable file never blocks anything): `unreadable` and `newer` are reported, and the
// launcher has already made the safe choice for them.
export type SelfRead<T> =
  | { state: 'absent' }
  | { state: 'valid'; value: T }
  | { state: 'unreadable'; why: string }
  | { state: 'newer'; schemaVersion: number };

export interface SelfFiles {
  candidate: SelfRead<Pointer>;
  trying: SelfRead<Pointer>;
  reverted: SelfRead<Pointer>;
  starts: SelfRead<StartRecord>;
  fallback: SelfRead<StartRecord>;
  packageTried: SelfRead<PackageTried>;
}

// The key of each file in SelfFiles.
export const SELF_FILE_KEYS: Record<SelfFile, keyof SelfFiles> = {
  candidate: 'candidate',
  trying: 'trying',
  reverted: 'reverted',
  starts: 'starts',
  fallback: 'fallback',
  'package-tried': 'packageTried',
};

// The launcher reads at most this much of a file, and so does this side.
const MAX_BYTES = 512;

export function selfFile(paths: HostPaths, name: SelfFile): string {
  return path.join(paths.selfDir, name);
}

// Reads `file` as the launcher does: valid only when it is exactly the line steward writes
// (trailing newlines aside, which the launcher's $(...) drops too).
async function readSelf<T>(file: string, schema: Schema<T>, line: (v: T) => string): Promise<SelfRead<T>> {
  let text: string;
  try {
    const raw = await readFileNoFollow(file, MAX_BYTES);
    if (raw === null) return { state: 'absent' };
    text = raw.toString('utf8');
  } catch (err) {
    return { state: 'unreadable', why: `${file}: ${(err as Error).message}` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { state: 'unreadable', why: `${file} is not JSON` };
  }
  const sv = (json as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof sv === 'number' && sv > SELF_SCHEMA_VERSION) return { state: 'newer', schemaVersion: sv };
  const parsed = schema.safeParse(json);
  if (!parsed.success) return { state: 'unreadable', why: `${file} does not validate` };
  if (text.replace(/\n+$/, '') !== line(parsed.data).trimEnd()) return { state: 'unreadable', why: `${file} is not in the launcher's one-line form` };
  return { state: 'valid', value: parsed.data };
}

// Every file of the trial, each as it reads.
export async function readSelfFiles(paths: HostPaths): Promise<SelfFiles> {
  const pointer = (name: SelfFile) => readSelf(selfFile(paths, name), pointerSchema, pointerLine);
  const record = (name: SelfFile) => readSelf(selfFile(paths, name), startRecordSchema, startRecordLine);
  const [candidate, trying, reverted, starts, fallback, packageTried] = await Promise.all([
    pointer('candidate'),
    pointer('trying'),
    pointer('reverted'),
    record('starts'),
    record('fallback'),
    readSelf(selfFile(paths, 'package-tried'), packageTriedSchema, packageTriedLine),
  ]);
  return { candidate, trying, reverted, starts, fallback, packageTried };
}

// The value of a read that is valid, else null.
export function validValue<T>(r: SelfRead<T>): T | null {
  return r.state === 'valid' ? r.value : null;
}

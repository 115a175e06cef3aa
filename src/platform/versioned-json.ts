import { StewardError } from '../core/errors.js';
import { readFileNoFollow } from './fs-atomic.js';

// A versioned JSON state file read without zod (issue 8, row 5: the agent's start-up path must
// not load it). versioned-file.ts reads the same files with a zod schema (and, on main, a parse
// cache); the read and the schemaVersion check below are the same as its own.

// What a checker says of one parsed file: its value, or where and why it is not one.
export type Checked<T> = { ok: true; value: T } | { ok: false; where: string; message: string };

// Reads a versioned JSON state file through O_NOFOLLOW: null when absent; a file that is
// unreadable, not JSON or from a newer steward throws STATE_INVALID naming it.
export async function readVersionedRaw(file: string, version: number, maxBytes: number): Promise<{ json: unknown } | null> {
  let json: unknown;
  try {
    const raw = await readFileNoFollow(file, maxBytes);
    if (raw === null) return null;
    json = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new StewardError('STATE_INVALID', `${file}: ${(err as Error).message}`, { cause: err });
  }
  const sv = (json as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof sv === 'number' && sv > version) {
    throw new StewardError('STATE_INVALID', `${file}: schemaVersion ${sv} is newer than this steward understands (${version})`);
  }
  return { json };
}

// As readVersionedRaw, then `check`: a file it refuses throws STATE_INVALID naming the key.
export async function readVersionedChecked<T>(file: string, version: number, check: (json: unknown) => Checked<T>, maxBytes: number): Promise<T | null> {
  const got = await readVersionedRaw(file, version, maxBytes);
  if (got === null) return null;
  const c = check(got.json);
  if (!c.ok) throw new StewardError('STATE_INVALID', `${file}: ${c.where || '(top level)'}: ${c.message}`);
  return c.value;
}

import type { z } from 'zod';
import { formatIssues } from '../core/config-schema.js';
import { StewardError } from '../core/errors.js';
import { readFileNoFollow } from './fs-atomic.js';

// Reads a versioned JSON state file through O_NOFOLLOW: null when absent; a file that
// is unreadable, not JSON, from a newer steward or invalid throws STATE_INVALID naming it.
export async function readVersionedJson<T>(file: string, version: number, schema: z.ZodType<T>, maxBytes = 4 * 1024 * 1024): Promise<T | null> {
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
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new StewardError('STATE_INVALID', `${file}: ${formatIssues(parsed.error.issues)}`);
  return parsed.data;
}

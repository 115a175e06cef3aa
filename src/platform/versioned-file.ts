import type { z } from 'zod';
import { formatIssues } from '../core/config-schema.js';
import { StewardError } from '../core/errors.js';
import { readVersionedRaw } from './versioned-json.js';

// Reads a versioned JSON state file through O_NOFOLLOW: null when absent; a file that
// is unreadable, not JSON, from a newer steward or invalid throws STATE_INVALID naming it.
export async function readVersionedJson<T>(file: string, version: number, schema: z.ZodType<T>, maxBytes = 4 * 1024 * 1024): Promise<T | null> {
  const got = await readVersionedRaw(file, version, maxBytes);
  if (got === null) return null;
  const json = got.json;
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new StewardError('STATE_INVALID', `${file}: ${formatIssues(parsed.error.issues)}`);
  return parsed.data;
}

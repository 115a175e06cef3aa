import { StewardError } from '../core/errors.js';
import { mustParse, type Schema } from '../core/must-parse.js';
import { readFileNoFollow } from './fs-atomic.js';
import { cachedParse, keepParse } from './parse-cache.js';

// Reads a versioned JSON state file through O_NOFOLLOW: null when absent; a file that
// is unreadable, not JSON, from a newer steward or refused by `schema` throws STATE_INVALID
// naming it (and, in the schema's words, the field and the rule).
// `keep`: the parse of an unchanged text is kept (parse-cache.ts), for the small files read
// on every supervisor pass; big or rarely read files (receipts, an agent's outbox) keep nothing.
export async function readVersionedJson<T>(file: string, version: number, schema: Schema<T>, maxBytes = 4 * 1024 * 1024, keep = false): Promise<T | null> {
  let json: unknown;
  let text: string;
  try {
    const raw = await readFileNoFollow(file, maxBytes);
    if (raw === null) return null;
    text = raw.toString('utf8');
    const same = keep ? cachedParse<T>(schema, file, text) : undefined;
    if (same !== undefined) return same;
    json = JSON.parse(text);
  } catch (err) {
    throw new StewardError('STATE_INVALID', `${file}: ${(err as Error).message}`, { cause: err });
  }
  const sv = (json as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof sv === 'number' && sv > version) {
    throw new StewardError('STATE_INVALID', `${file}: schemaVersion ${sv} is newer than this steward understands (${version})`);
  }
  const value = mustParse(schema, json, 'STATE_INVALID', file);
  if (keep) keepParse(schema, file, text, value);
  return value;
}

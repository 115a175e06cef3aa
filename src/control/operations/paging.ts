// Pagination by opaque cursor (the house style's "API that scripts can live with"): a long list
// comes in pages, each with `nextCursor` (null on the last), to pass back as `cursor`. A cursor
// is base64url JSON of where the page ended; a client should not read or build one.
import * as z from '../../core/zod-mini.js';
import { StewardError } from '../../core/errors.js';
import { parsePositiveInt } from '../cli/parse-options.js';
import { nulPath } from '../../core/nul.js';

export const DEFAULT_PAGE = 500;
export const MAX_PAGE = 1000;

export function encodeCursor(at: unknown): string {
  return Buffer.from(JSON.stringify(at), 'utf8').toString('base64url');
}

// The position a cursor names, checked against `schema`; a bad cursor (or one holding a NUL
// character) is a USAGE error.
export function decodeCursor<T>(cursor: string | undefined, schema: z.ZodMiniType<T>): T | null {
  if (cursor === undefined || cursor === '') return null;
  let parsed: unknown;
  try {
    parsed = /^[A-Za-z0-9_-]{1,1024}$/.test(cursor) ? JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) : undefined;
  } catch {
    parsed = undefined;
  }
  // A NUL inside the position (never one this server gave) is refused as any forged cursor.
  const r = nulPath(parsed) === null ? schema.safeParse(parsed) : { success: false as const };
  if (!r.success) throw new StewardError('USAGE', `cursor ${JSON.stringify(cursor.slice(0, 64))} is not one this server gave (pass back nextCursor as it came)`);
  return r.data;
}

// The page size asked for: 1 to MAX_PAGE, DEFAULT_PAGE when not given.
export function pageLimit(limit: string | undefined): number {
  return limit === undefined ? DEFAULT_PAGE : parsePositiveInt(limit, 'limit', MAX_PAGE);
}

// Fills a page of at most `limit` items that `keep`, reading the store `limit` rows at a time
// after a position: a filter that matches few rows still returns a full page, or the last one.
export async function fillPage<R, K>(read: (after: K | null, limit: number) => Promise<R[]>, keyOf: (row: R) => K, after: K | null, limit: number, keep: (row: R) => boolean | Promise<boolean>): Promise<{ rows: R[]; next: K | null }> {
  const rows: R[] = [];
  let at = after;
  for (;;) {
    const batch = await read(at, limit);
    for (const [i, r] of batch.entries()) {
      if (await keep(r)) rows.push(r);
      if (rows.length === limit) {
        // More may follow unless this was the store's last row.
        const last = i === batch.length - 1 && batch.length < limit;
        return { rows, next: last ? null : keyOf(r) };
      }
    }
    if (batch.length < limit) return { rows, next: null };
    at = keyOf(batch[batch.length - 1] as R);
  }
}

// `audit [--since 1h|2026-12-01T00:00:00Z]`: the audit log, oldest first (docs/design.md §12).
import * as z from '../../core/zod-mini.js';
import { StewardError } from '../../core/errors.js';
import { parseDuration } from '../cli/parse-options.js';
import type { AuditRow } from '../store/store.js';
import { decodeCursor, encodeCursor, pageLimit } from './paging.js';
import { flag } from './inputs.js';
import type { Operation } from './operation.js';

// Where a page ended, and the absolute `since` of the first page (so later pages keep it).
const cursorSchema = z.tuple([z.number().check(z.int(), z.nonnegative()), z.number().check(z.int(), z.nonnegative())]);

export const auditList: Operation<{ since?: string; cursor?: string; limit?: string }, { entries: AuditRow[]; nextCursor: string | null }> = {
  command: 'audit',
  action: null,
  role: 'viewer',
  paged: 'entries',
  input: z.strictObject({ since: flag, cursor: flag, limit: flag }),
  async run(ctx, i) {
    const since0 = i.since === undefined ? null : parseSince(i.since);
    const at = decodeCursor(i.cursor, cursorSchema);
    const limit = pageLimit(i.limit);
    return ctx.store.read(async (tx) => {
      const since = at ? at[1] : since0 === null ? 0 : 'at' in since0 ? since0.at : Math.max(0, (await tx.now()) - since0.ago);
      const entries = await tx.audit.page(since, at ? at[0] : 0, limit);
      const last = entries.length === limit ? entries[entries.length - 1] : undefined;
      return { entries, nextCursor: last ? encodeCursor([last.id, since]) : null };
    });
  },
};

// --since: a duration back from now (`1h`, `2d`), or an ISO 8601 time with its zone
// (`2026-12-01T00:00:00Z`, `2026-12-01T09:00:00+01:00`) or a date (`2026-12-01`, midnight UTC).
export function parseSince(text: string): { ago: number } | { at: number } {
  if (/^\d{4}-\d{2}-\d{2}$/.test(text) || /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(text)) {
    const at = Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text);
    if (!Number.isFinite(at) || at < 0) throw new StewardError('USAGE', `--since ${JSON.stringify(text)} is not a valid time`);
    return { at };
  }
  if (/^\d{4}-/.test(text)) throw new StewardError('USAGE', `--since ${JSON.stringify(text.slice(0, 64))} is not an ISO time with a zone, like 2026-12-01T09:00:00Z, nor a date like 2026-12-01`);
  return { ago: parseDuration(text, '--since') };
}

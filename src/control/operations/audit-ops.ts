// `audit [--since 1h]`: the audit log, oldest first (docs/design.md §12).
import * as z from '../../core/zod-mini.js';
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
    const sinceMs = i.since === undefined ? null : parseDuration(i.since, '--since');
    const at = decodeCursor(i.cursor, cursorSchema);
    const limit = pageLimit(i.limit);
    return ctx.store.read(async (tx) => {
      const since = at ? at[1] : sinceMs === null ? 0 : Math.max(0, (await tx.now()) - sinceMs);
      const entries = await tx.audit.page(since, at ? at[0] : 0, limit);
      const last = entries.length === limit ? entries[entries.length - 1] : undefined;
      return { entries, nextCursor: last ? encodeCursor([last.id, since]) : null };
    });
  },
};

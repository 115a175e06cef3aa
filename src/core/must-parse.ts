import type * as z from './zod-mini.js';
import { StewardError, type ReasonCode } from './errors.js';
import { formatIssues } from './format-issues.js';

// What steward asks of a schema: its parse (only, so that any schema of T is one).
export type Schema<T> = Pick<z.ZodMiniType<T>, 'safeParse'>;

// `v` as `schema` returns it (defaults filled in), or a StewardError of `code` naming `what` and
// why, in the schema's words (field and rule): for requests, files and payloads read, and for
// what steward checks before writing its own files (where a refusal is a bug: INTERNAL).
export function mustParse<T>(schema: Schema<T>, v: unknown, code: ReasonCode, what: string): T {
  const r = schema.safeParse(v);
  if (!r.success) throw new StewardError(code, `${what}: ${formatIssues(r.error.issues)}`);
  return r.data;
}

import type { z } from 'zod';
import { StewardError, type ReasonCode } from './errors.js';
import { formatIssues } from './format-issues.js';

// A JSON shape a daemon reads on its idle path, checked without zod (issue 8, row 5: zod alone
// is ~11 MB of a node process's RSS here). `check` decides; the zod schema, loaded only then,
// words a refusal. Each hand-written `check` is held to its schema both ways by a property test
// (test/helpers/check-arbitraries.ts assertSameAsSchema).
export interface Checker<T> {
  // The value as the schema would return it (defaults filled in), or null when it would refuse.
  check(v: unknown): T | null;
  // The schema `check` mirrors, imported only to explain a refusal.
  schema(): Promise<z.ZodType<T>>;
}

// Why `checker` refused `v`, in its schema's words.
export async function refusalOf<T>(checker: Checker<T>, v: unknown): Promise<string> {
  const r = (await checker.schema()).safeParse(v);
  // Only a checker that disagrees with its schema gets here; its property test fails first.
  return r.success ? 'refused by the check' : formatIssues(r.error.issues);
}

// `v` as `checker` takes it, or a StewardError of `code` naming `what` and why, in the schema's
// words: for values of a request or a file read once, and for what steward checks before
// writing its own files (where a refusal is a bug: INTERNAL).
export async function mustCheck<T>(checker: Checker<T>, v: unknown, code: ReasonCode, what: string): Promise<T> {
  const value = checker.check(v);
  if (value === null) throw new StewardError(code, `${what}: ${await refusalOf(checker, v)}`);
  return value;
}

// The result of one `agentctl doctor` check (docs/design.md §8): ok, warn or fail, with a detail that
// names the path, what was found and what was expected.
export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface CheckResult {
  name: string;
  status: CheckStatus;
  detail: string;
}

export const ok = (name: string, detail: string): CheckResult => ({ name, status: 'ok', detail });
export const warn = (name: string, detail: string): CheckResult => ({ name, status: 'warn', detail });
export const fail = (name: string, detail: string): CheckResult => ({ name, status: 'fail', detail });

// Whether the host passes: no check failed (warnings are allowed).
export function passed(results: readonly CheckResult[]): boolean {
  return results.every((r) => r.status !== 'fail');
}

// A mode as people write it (0644).
export function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}

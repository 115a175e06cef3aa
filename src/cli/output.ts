import { StewardError, toStewardError } from '../core/errors.js';
import { exitCodeFor, hintFor } from './error-message.js';

// Writes one JSON document on stdout (the --json contract).
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

// Prints an error for a human (stderr) or a program (stdout JSON) and returns its exit code.
export function reportError(err: unknown, json: boolean): number {
  const e = err instanceof StewardError ? err : toStewardError(err, 'INTERNAL');
  const exit = exitCodeFor(e.code);
  if (json) {
    printJson({ ok: false, error: { code: e.code, message: e.message, ...(e.details.attemptId ? { attemptId: e.details.attemptId } : {}) } });
  } else {
    process.stderr.write(`agentctl: ${e.code}: ${e.message}\n`);
    const hint = hintFor(e.code);
    if (hint) process.stderr.write(`  ${hint}\n`);
  }
  return exit;
}

// Formats epoch milliseconds for people.
export function when(ms: number | null | undefined): string {
  return ms ? new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z') : '-';
}

// Pads columns of a small table.
export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ')).join('\n') + '\n';
}

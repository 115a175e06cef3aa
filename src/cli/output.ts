import { escapeControlChars } from '../core/control-chars.js';
import { StewardError, toStewardError } from '../core/errors.js';
import { exitCodeFor, hintFor } from './error-message.js';

// Text from the helper, a state file, a receipt or the network as it may reach a terminal: its
// control characters escaped (a newline or an escape sequence in a hold's `by` would forge or
// hide lines). Every such text a human reads goes through here; --json goes through jsonText.
export const shown = escapeControlChars;

// Writes each line, shown(), with its newline (stdout unless told).
export function printLines(lines: string[], stream: NodeJS.WritableStream = process.stdout): void {
  stream.write(lines.map((l) => shown(l) + '\n').join(''));
}

// JSON text with the control characters JSON.stringify leaves as they are (DEL, C1, U+2028,
// U+2029, bidi overrides and isolates) written as \u escapes: the same document to a parser,
// nothing a terminal acts on (issue 31 item 16). They can only stand inside strings.
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(/[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

// Writes one JSON document on stdout (the --json contract).
export function printJson(value: unknown): void {
  process.stdout.write(jsonText(value, 2) + '\n');
}

// Prints an error for a human (stderr) or a program (stdout JSON) and returns its exit code.
export function reportError(err: unknown, json: boolean): number {
  const e = err instanceof StewardError ? err : toStewardError(err, 'INTERNAL');
  const exit = exitCodeFor(e.code);
  if (json) {
    printJson({ ok: false, error: { code: e.code, message: e.message, ...(e.details.attemptId ? { attemptId: e.details.attemptId } : {}) } });
  } else {
    process.stderr.write(`agentctl: ${e.code}: ${shown(e.message)}\n`);
    const hint = hintFor(e.code);
    if (hint) process.stderr.write(`  ${hint}\n`);
  }
  return exit;
}

// Formats epoch milliseconds for people.
export function when(ms: number | null | undefined): string {
  return ms ? new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z') : '-';
}

// Pads columns of a small table; each cell is shown().
export function table(cells: string[][]): string {
  const rows = cells.map((r) => r.map(shown));
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ')).join('\n') + '\n';
}

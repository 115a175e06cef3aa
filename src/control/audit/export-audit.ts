// `audit --format jsonl|csv` (docs/control-plane.md, "The audit log"): the entries as lines a script
// or a spreadsheet takes. Every value came from somebody (an operator's name, a target, a node's
// hostname in details): CSV quotes every field (RFC 4180: a quote doubled, commas and line breaks
// kept inside the quotes), and a field a spreadsheet would read as a formula (starting with =, +,
// -, @, a tab or a carriage return) gets a leading ' (OWASP, "CSV injection"), so that opening the
// export runs nothing.
import type { AuditRow } from '../store/store.js';

export const AUDIT_FORMATS = ['jsonl', 'csv'] as const;
export type AuditFormat = (typeof AUDIT_FORMATS)[number];

export const CSV_COLUMNS = ['id', 'at', 'operator', 'action', 'target', 'source', 'details'] as const;

// One JSON object per line, each entry as `audit --json` has it, with `at` also as ISO time.
export function auditJsonl(entries: readonly AuditRow[]): string {
  return entries.map((e) => JSON.stringify({ ...e, time: new Date(e.at).toISOString() }) + '\n').join('');
}

// A header line, then one line per entry; lines end in CRLF, as RFC 4180 says.
export function auditCsv(entries: readonly AuditRow[]): string {
  const lines = [CSV_COLUMNS.map(csvField).join(',')];
  for (const e of entries) lines.push([String(e.id), new Date(e.at).toISOString(), e.operator ?? '', e.action, e.target ?? '', e.source ?? '', JSON.stringify(e.details)].map(csvField).join(','));
  return lines.map((l) => l + '\r\n').join('');
}

// A CSV field: quoted, inner quotes doubled, and a formula's first character neutralized.
export function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return `"${safe.replace(/"/g, '""')}"`;
}

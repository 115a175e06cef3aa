import { StewardError } from '../../core/errors.js';
import { parseJson } from './parse-json.js';

// A hook's `events` column read back: JSON text of a list of strings. Anything else (a row
// altered by hand) reads as no events, so the hook is sent nothing rather than a reader failing.
export function readHookEvents(text: string): string[] {
  const v = parseJson<unknown>(text, []);
  return Array.isArray(v) && v.every((e) => typeof e === 'string') ? (v as string[]) : [];
}

// A second hook of a taken name (the table's primary key decides).
export function hookExists(name: string, cause: unknown): StewardError {
  return new StewardError('HOOK_EXISTS', `hook ${name} exists already; \`steward-control hook remove ${name}\` first to change it`, { cause });
}

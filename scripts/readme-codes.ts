// Rewrites the reason-code table in docs/reason-codes.md from src/cli/error-message.ts, the one
// place codes are mapped to text and exit codes. `npm run readme-codes`.
import { readFileSync, writeFileSync } from 'node:fs';
import { OPERATIONAL_CODES, OUTCOME_CODES, REFUSAL_CODES, RELEASE_PROBLEM_CODES } from '../src/core/errors.js';
import { reasonTable } from '../src/cli/error-message.js';

function kind(code: string): string {
  if ((REFUSAL_CODES as readonly string[]).includes(code)) return 'refusal, nothing changed';
  if ((RELEASE_PROBLEM_CODES as readonly string[]).includes(code)) return 'release problem, nothing changed';
  if ((OUTCOME_CODES as readonly string[]).includes(code)) return 'outcome';
  if ((OPERATIONAL_CODES as readonly string[]).includes(code)) return 'request or host';
  return '?';
}

// The markdown table of every reason code.
export function reasonCodesMarkdown(): string {
  const rows = reasonTable().map((r) => `| \`${r.code}\` | ${kind(r.code)} | ${r.exit} | ${r.hint} |`);
  return ['| code | kind | exit | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

const START = '<!-- reason-codes:start -->';
const END = '<!-- reason-codes:end -->';

// The page's text with the table between the markers replaced.
export function withReasonCodes(readme: string): string {
  const a = readme.indexOf(START);
  const b = readme.indexOf(END);
  if (a < 0 || b < a) throw new Error('docs/reason-codes.md lacks the reason-codes markers');
  return readme.slice(0, a + START.length) + '\n' + reasonCodesMarkdown() + '\n' + readme.slice(b);
}

if (process.argv[1]?.endsWith('readme-codes.js')) {
  const file = new URL('../../docs/reason-codes.md', import.meta.url);
  writeFileSync(file, withReasonCodes(readFileSync(file, 'utf8')));
}

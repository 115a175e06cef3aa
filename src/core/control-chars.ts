// Control characters in text that came from a client, a state file, a receipt or another
// program (issue 15 item 7): a terminal escape or a newline in a hold's `by` would repaint
// `agentctl status` or forge a line of it. Requests refuse them; the CLI escapes them on print.

// C0 controls, DEL, C1 controls, the line and paragraph separators, and the bidirectional
// overrides and isolates (which reorder what a terminal shows).
const CONTROL = '\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069';
const CONTROL_G = new RegExp(`[${CONTROL}]`, 'g');

// Text without control characters (for a zod `.regex` and a checker alike).
export const PLAIN_TEXT_RE = new RegExp(`^[^${CONTROL}]*$`);

// Control characters other than tab and newline: what a log tail may not carry (docs/design.md §12).
const LOG_CONTROL = CONTROL.replace('\\u0000-\\u001f', '\\u0000-\\u0008\\u000b-\\u001f');
const LOG_CONTROL_G = new RegExp(`[${LOG_CONTROL}]`, 'g');
// Text whose only control characters are tab and newline.
export const LOG_TEXT_RE = new RegExp(`^[^${LOG_CONTROL}]*$`);

// `text` with every control character but tab and newline replaced by U+FFFD.
export function replaceLogControlChars(text: string): string {
  return text.replace(LOG_CONTROL_G, '\ufffd');
}

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

// `text` with each control character written as an escape (`\n`, `\x1b`, `\u202e`).
export function escapeControlChars(text: string): string {
  return text.replace(CONTROL_G, (c) => {
    const named = NAMED[c];
    if (named) return named;
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

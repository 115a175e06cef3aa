// The failed version's log lines as a receipt carries them (`logTail`, receipt payload v2,
// docs/design.md §12): valid UTF-8, every control character but tab and newline replaced, at most
// LOG_TAIL_MAX_BYTES once JSON-encoded (the receipt is signed, relayed and stored as JSON, so the
// bound is on what it costs there: a line of quotes or escapes weighs what it encodes to).
import { replaceLogControlChars } from './control-chars.js';

export const LOG_TAIL_MAX_BYTES = 8 * 1024;
// A UTF-16 surrogate without its other half: no UTF-8 encodes it.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const HAS_LONE_SURROGATE = new RegExp(LONE_SURROGATE.source);

// The JSON-encoded size of a string, quotes included, in UTF-8 bytes.
export function encodedBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text), 'utf8');
}

// The end of `raw` (bytes or text read from a log) made fit for a receipt: decoded as UTF-8 with
// every invalid sequence as U+FFFD, lone surrogates likewise, controls replaced, then cut from
// the front, at a line start where one is left, until it encodes to LOG_TAIL_MAX_BYTES or less.
export function logTailOf(raw: Buffer | string): string {
  const decoded = typeof raw === 'string' ? raw : new TextDecoder('utf-8', { fatal: false }).decode(raw);
  let text = replaceLogControlChars(decoded.replace(LONE_SURROGATE, '\ufffd'));
  if (encodedBytes(text) <= LOG_TAIL_MAX_BYTES) return text;
  // Keep the last code points whose encoding fits, measured one at a time from the end (what one
  // weighs depends on it: `"` and `\\` take 2 bytes, `é` 2, an emoji 4). The helper reads at most
  // 16 KiB of a log for this, so the walk stays short.
  const chars = Array.from(text);
  let kept = 0;
  let bytes = 2;
  for (let i = chars.length - 1; i >= 0; i--) {
    const c = chars[i] as string;
    const b = encodedBytes(c) - 2;
    if (bytes + b > LOG_TAIL_MAX_BYTES) break;
    bytes += b;
    kept++;
  }
  text = chars.slice(chars.length - kept).join('');
  // The first line is cut: drop it when a later line starts.
  const nl = text.indexOf('\n');
  if (nl >= 0 && nl < text.length - 1) text = text.slice(nl + 1);
  return text;
}

// Whether a string is a log tail as logTailOf makes one (for the receipt schema).
export function isLogTail(text: string): boolean {
  return !HAS_LONE_SURROGATE.test(text) && encodedBytes(text) <= LOG_TAIL_MAX_BYTES && replaceLogControlChars(text) === text;
}

// Parsers for command-line values; a bad value is a USAGE error (exit 2).
import { StewardError } from '../../core/errors.js';
import { isLoopbackHost } from '../../core/name-checks.js';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

// "30m", "1h30m", "90s", "2d", "500ms" → milliseconds (positive; "0" too with allowZero).
export function parseDuration(text: string, what = 'duration', opts: { allowZero?: boolean } = {}): number {
  if (opts.allowZero && text === '0') return 0;
  const re = /(\d+)(ms|s|m|h|d)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    matched = re.lastIndex;
  }
  if (text.length === 0 || matched !== text.length || !Number.isSafeInteger(total) || total <= 0) {
    throw new StewardError('USAGE', `${what} ${JSON.stringify(text)} is not a duration like 30m, 1h, 90s, 2d or 1h30m`);
  }
  return total;
}

// An integer from 0 to `max`.
export function parseCount(text: string, what: string, max = 1_000_000): number {
  if (!/^\d{1,9}$/.test(text) || Number(text) > max) throw new StewardError('USAGE', `${what} ${JSON.stringify(text)} is not an integer from 0 to ${max}`);
  return Number(text);
}

// An ISO 8601 date and time with its zone (Z or ±hh:mm) → epoch ms.
export function parseInstant(text: string, what: string): number {
  const ok = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(text);
  const t = ok ? Date.parse(text) : NaN;
  if (!Number.isSafeInteger(t) || t < 0) throw new StewardError('USAGE', `${what} ${JSON.stringify(text)} is not an ISO 8601 time with its zone (like 2026-06-01T02:00:00Z or 2026-06-01T04:00+02:00)`);
  return t;
}

// A positive integer no larger than `max`.
export function parsePositiveInt(text: string, what: string, max = 1_000_000): number {
  if (!/^\d{1,9}$/.test(text) || Number(text) < 1 || Number(text) > max) throw new StewardError('USAGE', `${what} ${JSON.stringify(text)} is not an integer from 1 to ${max}`);
  return Number(text);
}

// "HOST:PORT" or "[v6]:PORT" (port 0 picks a free one).
export function parseListen(text: string, flag = '--listen'): { host: string; port: number; loopback: boolean } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new StewardError('USAGE', `${flag} ${JSON.stringify(text)} is not HOST:PORT (port 0-65535; [::1]:PORT for IPv6)`);
  const host = (m[1] ?? m[2]) as string;
  return { host, port, loopback: isLoopbackHost(host) };
}

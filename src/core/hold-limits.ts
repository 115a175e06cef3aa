// The bounds of a host's own hold (docs/design.md §18): `agentctl hold APP --reason R [--until
// DURATION]`. Shared by agentctl, which refuses a bad value before it asks, and the helper, which
// checks again whatever came over the socket.
import { StewardError } from './errors.js';
import { PLAIN_TEXT_RE } from './control-chars.js';

// The shortest and longest hold with an expiry: a minute (shorter is no hold an operator means),
// a year (longer is a typo; a hold without --until stands until release-hold).
export const HOLD_FOR_MIN_MS = 60_000;
export const HOLD_FOR_MAX_MS = 365 * 86_400_000;
// A reason is one line an operator wrote, in UTF-16 units.
export const HOLD_REASON_MAX = 256;

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

// "30m", "4h", "2d", "1d12h" → milliseconds, from HOLD_FOR_MIN_MS to HOLD_FOR_MAX_MS; anything
// else is USAGE naming what was given.
export function parseHoldDuration(text: string): number {
  const like = 'a duration like 30m, 4h, 2d or 1d12h (minutes, hours, days)';
  const re = /(\d{1,6})([mhd])/y;
  let total = 0;
  let at = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    at = re.lastIndex;
  }
  if (text.length === 0 || text.length > 32 || at !== text.length) throw new StewardError('USAGE', `--until ${JSON.stringify(text)} is not ${like}`);
  if (total < HOLD_FOR_MIN_MS) throw new StewardError('USAGE', `--until ${text} is shorter than a minute; give ${like}`);
  if (total > HOLD_FOR_MAX_MS) throw new StewardError('USAGE', `--until ${text} is longer than 365 days; a hold without --until stands until \`agentctl release-hold\``);
  return total;
}

// Why `reason` cannot be a hold's reason, or null when it can: it must say something, fit on a
// line of HOLD_REASON_MAX units and hold no control character (core/control-chars.ts).
export function holdReasonProblem(reason: string): string | null {
  if (reason.trim().length === 0) return 'is empty; say why the app is held';
  if (reason.length > HOLD_REASON_MAX) return `is longer than ${HOLD_REASON_MAX} characters`;
  if (!PLAIN_TEXT_RE.test(reason)) return 'holds a control character (a newline, an escape, a bidirectional override)';
  return null;
}

// A hold as status, heartbeats and the control plane show it (docs/design.md §18): who put it,
// why, since when, and until when (null: until `agentctl release-hold`).
export interface HoldView {
  by: string;
  reason: string;
  at: number;
  until: number | null;
}

// The last hold lifted on an app: the hold, when, and how (`expired`: the helper lifted it at
// `until`; `released`: `agentctl release-hold`, by `releasedBy`).
export interface HoldLift extends HoldView {
  liftedAt: number;
  how: 'expired' | 'released';
  releasedBy?: string;
}

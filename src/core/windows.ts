// Rollout windows (docs/design.md §11): `--window 'Mon-Fri 02:00-05:00'` (days Mon..Sun, ranges such as
// Fri-Mon, lists, or `daily`; an end at or before the start crosses midnight into the next day;
// 24:00 is the end of the day) in an IANA time zone (`--tz`, default UTC), read through Intl.
// Pure: the time zone rules come from Node's ICU, the clock from the caller.
//
// Local times that a daylight-saving change skips or repeats: a window edge in the skipped hour
// moves later by the gap (02:30 on a night that jumps from 02:00 to 03:00 is 03:30), one in the
// repeated hour takes its first occurrence. Windows whose open intervals touch or overlap are
// one interval.
import { StewardError } from './errors.js';

export const DAY_NAMES = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;

export interface RolloutWindow {
  // The spec as given.
  text: string;
  // days[0] is Monday ... days[6] Sunday: the days the window opens on.
  days: boolean[];
  // Minutes after local midnight; end in 1..1440. end <= start: it closes the next day.
  startMin: number;
  endMin: number;
}

const MINUTE = 60_000;
const DAY = 86_400_000;

const usage = (text: string, why: string) => new StewardError('USAGE', `--window ${JSON.stringify(text)}: ${why} (like 'Mon-Fri 02:00-05:00', 'Sat,Sun 22:00-06:00', 'daily 01:00-03:00')`);

function dayIndex(text: string, name: string): number {
  const i = DAY_NAMES.findIndex((d) => d.toLowerCase() === name.toLowerCase());
  if (i < 0) throw usage(text, `${JSON.stringify(name)} is not a day (Mon..Sun)`);
  return i;
}

function minutes(text: string, hhmm: string, isEnd: boolean): number {
  const m = /^(\d{2}):(\d{2})$/.exec(hhmm);
  const h = m ? Number(m[1]) : NaN;
  const min = m ? Number(m[2]) : NaN;
  if (!m || min > 59 || h > 24 || (h === 24 && (min !== 0 || !isEnd))) throw usage(text, `${JSON.stringify(hhmm)} is not a time HH:MM${isEnd ? ' (24:00 allowed as an end)' : ''}`);
  return h * 60 + min;
}

// Parses one --window; a bad one is a USAGE error.
export function parseWindow(text: string): RolloutWindow {
  const m = /^\s*(\S+)\s+(\S+)-(\S+)\s*$/.exec(text);
  if (!m) throw usage(text, 'not DAYS HH:MM-HH:MM');
  const days = new Array<boolean>(7).fill(false);
  if ((m[1] as string).toLowerCase() === 'daily') days.fill(true);
  else {
    for (const part of (m[1] as string).split(',')) {
      const range = part.split('-');
      if (range.length > 2 || range.some((x) => x === '')) throw usage(text, `${JSON.stringify(part)} is not a day or a range of days`);
      const from = dayIndex(text, range[0] as string);
      const to = range.length === 2 ? dayIndex(text, range[1] as string) : from;
      // Fri-Mon wraps through the weekend.
      for (let i = from; ; i = (i + 1) % 7) {
        days[i] = true;
        if (i === to) break;
      }
    }
  }
  const startMin = minutes(text, m[2] as string, false);
  const endMin = minutes(text, m[3] as string, true);
  if (startMin === endMin) throw usage(text, 'it opens and closes at the same time');
  return { text: text.trim(), days, startMin, endMin };
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formatters.set(tz, f);
  }
  return f;
}

// Checks an IANA time zone name (through Intl); a bad one is a USAGE error.
export function checkTimeZone(tz: string): string {
  try {
    formatterFor(tz);
    return tz;
  } catch {
    throw new StewardError('USAGE', `--tz ${JSON.stringify(tz)} is not an IANA time zone (like UTC, Europe/Paris, America/New_York)`);
  }
}

interface Local {
  y: number;
  mo: number;
  d: number;
  h: number;
  mi: number;
  s: number;
}

function localOf(at: number, tz: string): Local {
  const out: Record<string, number> = {};
  for (const p of formatterFor(tz).formatToParts(new Date(at))) if (p.type !== 'literal') out[p.type] = Number(p.value);
  return { y: out.year as number, mo: out.month as number, d: out.day as number, h: (out.hour as number) % 24, mi: out.minute as number, s: out.second as number };
}

// The zone's offset from UTC at an instant, in ms (local = utc + offset).
function offsetAt(at: number, tz: string): number {
  const l = localOf(at, tz);
  return Date.UTC(l.y, l.mo - 1, l.d, l.h, l.mi, l.s) - Math.floor(at / 1000) * 1000;
}

// Instants already found, by zone and wall time: a run's windows are looked at on every tick,
// and Intl's formatting is most of the cost. Bounded; cleared when full.
const instants = new Map<string, number>();
const MAX_INSTANTS = 10_000;

// The instant a local wall time (a calendar day and minutes after its midnight) names in `tz`.
function instantOf(y: number, mo: number, d: number, min: number, tz: string): number {
  const wall = Date.UTC(y, mo - 1, d) + min * MINUTE;
  const key = `${tz} ${wall}`;
  const known = instants.get(key);
  if (known !== undefined) return known;
  if (instants.size >= MAX_INSTANTS) instants.clear();
  const t = findInstant(wall, tz);
  instants.set(key, t);
  return t;
}

function findInstant(wall: number, tz: string): number {
  // At most one transition within a day on either side: the offsets before and after it.
  const before = offsetAt(wall - DAY, tz);
  const after = offsetAt(wall + DAY, tz);
  const fits = (t: number) => offsetAt(t, tz) === wall - t;
  const a = wall - before;
  const b = wall - after;
  const ok = [a, b].filter(fits).sort((x, y) => x - y);
  // Repeated hour: the first occurrence. Skipped hour: the old offset lands after the gap.
  return ok.length ? (ok[0] as number) : a;
}

export type WindowPosition =
  // Inside the (merged) open interval [start, end).
  | { open: true; start: number; end: number }
  // Closed; `next` is when the next interval opens (null: no window ever opens).
  | { open: false; next: number | null };

// Where `at` stands against the windows in `tz`. With no window, always open, without an end.
export function windowAt(windows: readonly RolloutWindow[], tz: string, at: number): WindowPosition | { open: true; start: null; end: null } {
  if (windows.length === 0) return { open: true, start: null, end: null };
  const today = localOf(at, tz);
  const intervals: Array<[number, number]> = [];
  // From two days back (a window opened yesterday may still be open) to eight days on.
  for (let k = -2; k <= 8; k++) {
    const date = new Date(Date.UTC(today.y, today.mo - 1, today.d + k));
    const y = date.getUTCFullYear();
    const mo = date.getUTCMonth() + 1;
    const d = date.getUTCDate();
    const weekday = (date.getUTCDay() + 6) % 7;
    for (const w of windows) {
      if (!w.days[weekday]) continue;
      const start = instantOf(y, mo, d, w.startMin, tz);
      const endDay = w.endMin <= w.startMin || w.endMin === 1440 ? 1 : 0;
      const endMin = w.endMin === 1440 ? 0 : w.endMin;
      const next = new Date(Date.UTC(y, mo - 1, d + endDay));
      const end = instantOf(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), endMin, tz);
      if (end > start) intervals.push([start, end]);
    }
  }
  intervals.sort((p, q) => p[0] - q[0]);
  const merged: Array<[number, number]> = [];
  for (const iv of intervals) {
    const last = merged[merged.length - 1];
    if (last && iv[0] <= last[1]) last[1] = Math.max(last[1], iv[1]);
    else merged.push([iv[0], iv[1]]);
  }
  for (const [start, end] of merged) {
    if (start <= at && at < end) return { open: true, start, end };
    if (start > at) return { open: false, next: start };
  }
  return { open: false, next: null };
}

// A window list for a person: "Mon-Fri 02:00-05:00, Sat 00:00-24:00 (Europe/Paris)".
export function describeWindows(windows: readonly string[], tz: string): string {
  return windows.length ? `${windows.join(', ')} (${tz})` : 'any time';
}

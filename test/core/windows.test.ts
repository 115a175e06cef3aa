import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkTimeZone, parseWindow, windowAt } from '../../src/core/windows.js';

const at = (iso: string) => Date.parse(iso);
const W = (...specs: string[]) => specs.map(parseWindow);

test('window specs: days, ranges that wrap, lists, daily, 24:00 as an end', () => {
  const days = (spec: string) => parseWindow(spec).days.map((d, i) => (d ? 'MTWTFSS'[i] : '.')).join('');
  assert.equal(days('Mon-Fri 02:00-05:00'), 'MTWTF..');
  assert.equal(days('Fri-Mon 22:00-06:00'), 'M...FSS');
  assert.equal(days('Sat,Sun 00:00-24:00'), '.....SS');
  assert.equal(days('mon,Wed-thu 01:00-02:00'), 'M.WT...');
  assert.equal(days('daily 01:00-03:00'), 'MTWTFSS');
  assert.deepEqual([parseWindow('Sun 00:00-24:00').startMin, parseWindow('Sun 00:00-24:00').endMin], [0, 1440]);
});

test('bad window specs and time zones are usage errors', () => {
  for (const spec of ['Mon 02:00', 'Mon 2:00-05:00', 'Funday 01:00-02:00', 'Mon-Fri-Sat 01:00-02:00', 'Mon, 01:00-02:00', 'Mon 01:00-01:00', 'Mon 24:00-02:00', 'Mon 01:60-02:00', 'Mon 01:00-24:30', '', 'daily']) {
    assert.throws(() => parseWindow(spec), (e: Error & { code?: string }) => e.code === 'USAGE', spec);
  }
  for (const tz of ['Mars/Olympus', 'UTC+1', '']) assert.throws(() => checkTimeZone(tz), (e: Error & { code?: string }) => e.code === 'USAGE', tz);
  assert.equal(checkTimeZone('Europe/Paris'), 'Europe/Paris');
});

test('without windows it is always open, without an end', () => {
  assert.deepEqual(windowAt([], 'UTC', at('2026-01-01T00:00:00Z')), { open: true, start: null, end: null });
});

test('a window that crosses midnight is open until its end the next day, closed after, with the next opening', () => {
  const w = W('Fri 22:00-02:00');
  // 2026-01-02 is a Friday.
  assert.deepEqual(windowAt(w, 'UTC', at('2026-01-03T01:00:00Z')), { open: true, start: at('2026-01-02T22:00:00Z'), end: at('2026-01-03T02:00:00Z') });
  assert.deepEqual(windowAt(w, 'UTC', at('2026-01-03T02:00:00Z')), { open: false, next: at('2026-01-09T22:00:00Z') });
  assert.deepEqual(windowAt(w, 'UTC', at('2026-01-02T21:59:59Z')), { open: false, next: at('2026-01-02T22:00:00Z') });
});

test('windows that touch or overlap are one interval', () => {
  const w = W('Sat 22:00-24:00', 'Sun 00:00-03:00', 'Sun 02:00-04:00');
  assert.deepEqual(windowAt(w, 'UTC', at('2026-01-03T23:00:00Z')), { open: true, start: at('2026-01-03T22:00:00Z'), end: at('2026-01-04T04:00:00Z') });
});

test('in a zone, windows follow local time across both DST changes', () => {
  const w = W('daily 01:00-04:00');
  // Europe/Paris, 2026-03-29: 02:00 CET becomes 03:00 CEST. 01:00 CET is 00:00Z, 04:00 CEST is 02:00Z.
  assert.deepEqual(windowAt(w, 'Europe/Paris', at('2026-03-29T01:00:00Z')), { open: true, start: at('2026-03-29T00:00:00Z'), end: at('2026-03-29T02:00:00Z') });
  // The day before and after: three hours each.
  assert.deepEqual(windowAt(w, 'Europe/Paris', at('2026-03-28T01:00:00Z')), { open: true, start: at('2026-03-28T00:00:00Z'), end: at('2026-03-28T03:00:00Z') });
  assert.deepEqual(windowAt(w, 'Europe/Paris', at('2026-03-30T00:00:00Z')), { open: true, start: at('2026-03-29T23:00:00Z'), end: at('2026-03-30T02:00:00Z') });
  // 2026-10-25: 03:00 CEST becomes 02:00 CET. 01:00 CEST is 23:00Z the day before, 04:00 CET is 03:00Z: four hours.
  assert.deepEqual(windowAt(w, 'Europe/Paris', at('2026-10-25T01:00:00Z')), { open: true, start: at('2026-10-24T23:00:00Z'), end: at('2026-10-25T03:00:00Z') });
  // An edge in the skipped hour moves later by the gap: 02:30 that night is 03:30 CEST (01:30Z).
  assert.deepEqual(windowAt(W('Sun 02:30-05:00'), 'Europe/Paris', at('2026-03-29T00:45:00Z')), { open: false, next: at('2026-03-29T01:30:00Z') });
  // An edge in the repeated hour takes its first occurrence: 02:30 CEST (00:30Z).
  assert.deepEqual(windowAt(W('Sun 02:30-06:00'), 'Europe/Paris', at('2026-10-25T00:00:00Z')), { open: false, next: at('2026-10-25T00:30:00Z') });
  // New York, with its own change on 2026-03-08.
  assert.deepEqual(windowAt(W('Sun 01:00-04:00'), 'America/New_York', at('2026-03-08T07:00:00Z')), { open: true, start: at('2026-03-08T06:00:00Z'), end: at('2026-03-08T08:00:00Z') });
});

import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { TimeSlicer } from '../../src/platform/time-slice.js';

// src/platform/time-slice.ts: a loop of synchronous calls gives the event loop a turn once a
// slice is over, and only then.
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

test('a slicer is due only once its slice is over, and again a slice after its turn', async () => {
  const s = new TimeSlicer(5);
  let due = 0;
  for (let i = 0; i < 64; i++) if (s.due()) due++;
  assert.equal(due, 0, 'no turn within the slice');
  spin(6);
  let calls = 0;
  while (!s.due()) calls++;
  assert.ok(calls < 16, `due within 16 calls of the slice's end (${calls})`);
  await s.pass();
  for (let i = 0; i < 64; i++) assert.equal(s.due(), false, 'a new slice after the turn');
});

test('a turn lets pending I/O and immediates run before the loop goes on', async () => {
  const s = new TimeSlicer(1);
  let read = false;
  const reading = readFile(new URL(import.meta.url)).then(() => {
    read = true;
  });
  // The loop of synchronous calls: it holds the event loop until it yields.
  // At most ~2 s of it: a slicer that never yields ends the loop with the read still pending.
  for (let i = 0; !read && i < 20_000; i++) {
    spin(0.1);
    if (s.due()) await s.pass();
  }
  await reading;
  assert.ok(read, 'the read finished while the loop ran, in its turns');
});

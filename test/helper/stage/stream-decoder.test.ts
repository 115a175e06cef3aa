import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { StreamDecoder } from '../../../src/helper/stage/stream-decoder.js';

// docs/design.md §20.5: a pack cut midway keeps what came whole and asks again for the rest. The
// clean-up after the cut must come after the last reader callback: one still running (opening the
// next object's file) would leave a file behind that the next request's O_EXCL open meets.
test('stop() returns only once the callback that is running has ended, and none runs after it', async () => {
  const events: string[] = [];
  let calls = 0;
  const decoder = new StreamDecoder('the pack', async () => {
    const n = ++calls;
    events.push(`start ${n}`);
    await new Promise((r) => setTimeout(r, 60));
    events.push(`end ${n}`);
  });
  // Several chunks of output: the decompressor has more for `out` while the first call sleeps.
  const gz = gzipSync(randomBytes(512 * 1024));
  await decoder.write(gz.subarray(0, gz.length - 10));
  await new Promise((r) => setTimeout(r, 20));
  assert.ok(calls >= 1, 'a callback is running');
  await decoder.stop();
  events.push('stopped');
  const after = events.length;
  await new Promise((r) => setTimeout(r, 150));
  assert.equal(events.length, after, `no callback after stop(): ${events.join(', ')}`);
  assert.equal(events[after - 2], `end ${calls}`, `the running callback ended before stop() returned: ${events.join(', ')}`);
});

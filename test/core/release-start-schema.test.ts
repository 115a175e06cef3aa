import { test } from 'node:test';
import assert from 'node:assert/strict';
import { releaseFileSchema } from '../../src/core/release-schemas.js';

// start.ready and start.watchdogMs (docs/design.md §17): what a release may say, and the values it
// may not (refused at staging, RELEASE_INVALID, with a message that names the rule).

const parse = (start: Record<string, unknown>) => releaseFileSchema.safeParse({ name: 'web', version: '1.0.0', start: { command: ['node', 'server.js'], ...start } });

test('start.ready "fd" and a watchdogMs from 100 ms to an hour are taken', () => {
  for (const start of [{ ready: 'fd' }, { watchdogMs: 100 }, { watchdogMs: 3_600_000 }, { ready: 'fd', watchdogMs: 2000 }, {}]) {
    const r = parse(start);
    assert.ok(r.success, JSON.stringify(start));
    assert.deepEqual({ ready: r.data.start?.ready, watchdogMs: r.data.start?.watchdogMs }, { ready: undefined, watchdogMs: undefined, ...start });
  }
});

test('a watchdogMs of 0, negative, fractional, absurdly short or long, or not a number is refused with a message that says the range', () => {
  for (const watchdogMs of [0, -1000, 1.5, 99, 50, 3_600_001, 1e12, '2000', null, Number.NaN]) {
    const r = parse({ watchdogMs });
    assert.equal(r.success, false, String(watchdogMs));
    const text = JSON.stringify(r.error?.issues);
    assert.match(text, /watchdogMs|expected number/, `${watchdogMs}: ${text}`);
    if (typeof watchdogMs === 'number' && !Number.isNaN(watchdogMs)) assert.match(text, /from 100 to 3600000/, text);
  }
});

test('start.ready takes only "fd"', () => {
  for (const ready of ['notify', 'FD', true, 3]) assert.equal(parse({ ready }).success, false, String(ready));
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { releaseFileSchema } from '../../src/core/release-schemas.js';

// The watch window and liveness of a release's health (docs/design.md §17): what the manifest may
// say, and the bad values it may not.

const release = (health: Record<string, unknown>) => ({ name: 'web', version: '1.0.0', start: { command: ['node', 'server.js'] }, health });
const parse = (health: Record<string, unknown>) => releaseFileSchema.safeParse(release(health));

test('watchMs, watchMaxRestarts and liveness are optional; liveness fills in its defaults', () => {
  const plain = parse({ http: 'http://127.0.0.1:8080/healthz' });
  assert.ok(plain.success);
  assert.equal(plain.data.health?.watchMs, undefined, 'no default written into the manifest: the helper applies it');
  const full = parse({ http: 'http://127.0.0.1:8080/healthz', watchMs: 600_000, watchMaxRestarts: 0, liveness: {} });
  assert.ok(full.success);
  assert.deepEqual(full.data.health?.liveness, { intervalMs: 10_000, failureThreshold: 3, timeoutMs: 2_000 });
  assert.equal(parse({ tcp: '127.0.0.1:8080', watchMs: 0, liveness: { intervalMs: 100, failureThreshold: 100, timeoutMs: 60_000 } }).success, true);
});

test('bad values are refused with a message that names them', () => {
  const refused: Array<[Record<string, unknown>, RegExp]> = [
    [{ http: 'http://127.0.0.1:1/', watchMs: -1 }, /watchMs/],
    [{ http: 'http://127.0.0.1:1/', watchMs: 86_400_001 }, /watchMs/],
    [{ http: 'http://127.0.0.1:1/', watchMs: 1.5 }, /watchMs/],
    [{ http: 'http://127.0.0.1:1/', watchMs: '300000' }, /watchMs/],
    [{ http: 'http://127.0.0.1:1/', watchMaxRestarts: 1001 }, /watchMaxRestarts/],
    [{ liveness: {} }, /liveness needs health\.http or health\.tcp/],
    [{ http: 'http://127.0.0.1:1/', liveness: { intervalMs: 0 } }, /intervalMs/],
    [{ http: 'http://127.0.0.1:1/', liveness: { failureThreshold: 0 } }, /failureThreshold/],
    [{ http: 'http://127.0.0.1:1/', liveness: { timeoutMs: 600_000 } }, /timeoutMs/],
    [{ http: 'http://127.0.0.1:1/', liveness: { every: 5 } }, /every|unrecognized/i],
  ];
  for (const [health, why] of refused) {
    const r = parse(health);
    assert.equal(r.success, false, JSON.stringify(health));
    const text = JSON.stringify(r.error?.issues);
    assert.match(text, why, `${JSON.stringify(health)}: ${text}`);
  }
});

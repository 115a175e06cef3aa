// The bound on trust-refresh over helper.sock (docs/design.md §21.3, src/helper/trust/refresh-gate.ts),
// on a fake monotonic clock: one verification at a time, an identical bundle not verified twice,
// a token bucket for the rest; each refusal BUSY.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StewardError } from '../../../src/core/errors.js';
import { REFUSAL_MEMORY_MS, TRUST_REFRESH_BURST, TRUST_REFRESH_REFILL_MS, TrustRefreshGate } from '../../../src/helper/trust/refresh-gate.js';

const busy = (why: RegExp) => (err: unknown) => {
  assert.ok(err instanceof StewardError, String(err));
  assert.equal(err.code, 'BUSY', err.message);
  assert.match(err.message, why);
  return true;
};

function gate() {
  let t = 1000;
  const g = new TrustRefreshGate({ monotonic: () => t });
  const verified: string[] = [];
  const run = (bundle: string, outcome: 'ok' | 'refused' = 'ok') =>
    g.run(
      async () => Buffer.from(bundle),
      async (bytes) => {
        verified.push(bytes.toString());
        if (outcome === 'refused') throw new StewardError('TRUST_SIGNATURE', `${bundle} is not signed`);
        return `verified ${bundle}`;
      },
      async () => 'as trusted now',
    );
  return { g, run, verified, advance: (ms: number) => (t += ms) };
}

test('a second bundle while one is being verified is BUSY, and the first still answers', async () => {
  const g = new TrustRefreshGate({ monotonic: () => 0 });
  let release!: () => void;
  const first = g.run(async () => Buffer.from('a'), () => new Promise<string>((r) => (release = () => r('a done'))), async () => 'now');
  await new Promise((r) => setImmediate(r));
  await assert.rejects(g.run(async () => Buffer.from('b'), async () => 'b done', async () => 'now'), busy(/one at a time/));
  release();
  assert.equal(await first, 'a done');
  assert.equal(await g.run(async () => Buffer.from('b'), async () => 'b done', async () => 'now'), 'b done', 'free again once it ended');
});

test('a bundle still being read (a slow upload) holds nothing: another is verified meanwhile', async () => {
  const g = new TrustRefreshGate({ monotonic: () => 0 });
  let arrive!: () => void;
  const slow = g.run(() => new Promise<Buffer>((r) => (arrive = () => r(Buffer.from('slow')))), async () => 'slow done', async () => 'now');
  await new Promise((r) => setImmediate(r));
  assert.equal(await g.run(async () => Buffer.from('quick'), async () => 'quick done', async () => 'now'), 'quick done');
  arrive();
  assert.equal(await slow, 'slow done');
});

test('a bundle identical to the last verified one is answered from the store, never verified again; one set-root later it is', async () => {
  const { g, run, verified } = gate();
  assert.equal(await run('bundle-1'), 'verified bundle-1');
  for (let i = 0; i < 20; i++) assert.equal(await run('bundle-1'), 'as trusted now');
  assert.deepEqual(verified, ['bundle-1'], 'twenty identical bundles cost no verification');
  g.storeChanged();
  assert.equal(await run('bundle-1'), 'verified bundle-1');
  assert.equal(verified.length, 2);
});

test('an identical refused bundle is refused again without verifying, for a minute', async () => {
  const { run, verified, advance } = gate();
  for (let i = 0; i < 5; i++) await assert.rejects(run('bad', 'refused'), (e: unknown) => e instanceof StewardError && e.code === 'TRUST_SIGNATURE');
  assert.equal(verified.length, 1);
  advance(REFUSAL_MEMORY_MS + TRUST_REFRESH_REFILL_MS);
  await assert.rejects(run('bad', 'refused'), (e: unknown) => e instanceof StewardError && e.code === 'TRUST_SIGNATURE');
  assert.equal(verified.length, 2, 'verified again after the minute');
});

test(`distinct bundles: ${TRUST_REFRESH_BURST} at once, then one every ${TRUST_REFRESH_REFILL_MS / 1000} s; more is BUSY naming when to try again`, async () => {
  const { run, verified, advance } = gate();
  for (let i = 0; i < TRUST_REFRESH_BURST; i++) assert.equal(await run(`b${i}`), `verified b${i}`);
  await assert.rejects(run('flood-1'), busy(new RegExp(`at most ${TRUST_REFRESH_BURST} trust bundles .* try again in ${TRUST_REFRESH_REFILL_MS / 1000} s$`)));
  // Refused ones cost a token too.
  advance(TRUST_REFRESH_REFILL_MS / 3);
  await assert.rejects(run('flood-2', 'refused'), busy(/try again in 10 s/));
  assert.equal(verified.length, TRUST_REFRESH_BURST, 'nothing past the bucket was verified');
  advance((2 * TRUST_REFRESH_REFILL_MS) / 3);
  assert.equal(await run('after-refill'), 'verified after-refill');
  await assert.rejects(run('flood-3'), busy(/try again/));
  // A flood over a minute verifies at most the bucket and one per refill.
  let ok = 0;
  for (let s = 0; s < 60; s++) {
    advance(1000);
    try {
      await run(`flood-${s}-x`);
      ok++;
    } catch (err) {
      assert.ok(err instanceof StewardError && err.code === 'BUSY');
    }
  }
  assert.equal(ok, 60_000 / TRUST_REFRESH_REFILL_MS);
  // Idle long enough, the whole burst is back, never more.
  advance(10 * TRUST_REFRESH_REFILL_MS);
  for (let i = 0; i < TRUST_REFRESH_BURST; i++) await run(`burst2-${i}`);
  await assert.rejects(run('burst2-over'), busy(/try again/));
});

test('a disk or read failure is not remembered: the same bytes are verified again', async () => {
  const g = new TrustRefreshGate({ monotonic: () => 0 });
  let calls = 0;
  const verify = async () => {
    calls++;
    if (calls === 1) throw new StewardError('IO_ERROR', 'disk');
    return 'ok';
  };
  await assert.rejects(g.run(async () => Buffer.from('x'), verify, async () => 'now'), /disk/);
  assert.equal(await g.run(async () => Buffer.from('x'), verify, async () => 'now'), 'ok');
});

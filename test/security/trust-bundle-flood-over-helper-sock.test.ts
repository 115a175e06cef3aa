import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { StewardError } from '../../src/core/errors.js';
import { TRUST_REFRESH_BURST } from '../../src/helper/trust/refresh-gate.js';
import { bundleOf, trustedVersions, tufHost } from '../helpers/tuf-host.js';

// The attack: any member of the agent's group may send `trust-refresh` on helper.sock with a bundle
// of up to 8 MiB. Nothing is trusted unless it verifies, but each verification is root's CPU, so a
// flood of bundles would keep the helper verifying. Bound (docs/design.md §21.3): one at a time,
// the bundle last verified answered again without verifying, the rest a token bucket, BUSY past it.
// Root's admin.sock is not bound.
test('a flood of trust bundles over helper.sock: identical ones cost nothing, distinct ones are BUSY past the bucket; admin.sock still verifies', { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t); // one refresh made: one token spent
  const before = await trustedVersions(h);
  const json = JSON.stringify(bundleOf(h.repo));
  const send = (bytes: Buffer, sock = h.helperSock) => sock.trustRefresh({ upload: bytes.length }, { upload: { size: bytes.length, stream: Readable.from([bytes]) } });

  // The bundle the host verified last, thirty times: each answered with what it trusts, none
  // verified again (thirty verifications would have run past the bucket: BUSY).
  for (let i = 0; i < 30; i++) {
    const a = await send(Buffer.from(json));
    assert.deepEqual([a.rootVersion, a.timestampVersion], [before.rootVersion, before.timestampVersion]);
  }

  // Distinct bytes (the same bundle with trailing blanks, each a new verification): the bucket's
  // tokens, then BUSY, naming when to try again.
  const outcomes: string[] = [];
  for (let i = 1; i <= 12; i++) {
    try {
      await send(Buffer.from(json + ' '.repeat(i)));
      outcomes.push('ok');
    } catch (err) {
      assert.ok(err instanceof StewardError || (err as { code?: string }).code, String(err));
      const e = err as { code: string; message: string };
      assert.equal(e.code, 'BUSY', e.message);
      assert.match(e.message, /trust-refresh: at most \d+ trust bundles are verified at once and one more every \d+ s; try again in \d+ s/);
      outcomes.push('busy');
    }
  }
  const verified = outcomes.filter((o) => o === 'ok').length;
  assert.ok(verified >= TRUST_REFRESH_BURST - 1 && verified <= TRUST_REFRESH_BURST + 1, outcomes.join(' '));
  assert.deepEqual(outcomes.slice(-6), Array(6).fill('busy'), outcomes.join(' '));

  // Root is not bound, and the host's trust is as it was.
  const admin = await send(Buffer.from(json + ' '.repeat(40)), h.adminSock);
  assert.equal(admin.timestampVersion, before.timestampVersion);
  assert.deepEqual(await trustedVersions(h), before);
});

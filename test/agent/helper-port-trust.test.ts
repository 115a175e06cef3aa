import { test } from 'node:test';
import assert from 'node:assert/strict';
import { socketHelper } from '../../src/agent/helper-port.js';
import { StewardError } from '../../src/core/errors.js';
import { addWeb, bundleOf, envelopeOf, NODE_ID, tufHost, web } from '../helpers/tuf-host.js';
import { signDirective } from '../../src/platform/trust/directive.js';
import { receiptOf } from '../helpers/helper-sock-attempts.js';

// The agent's own port to a real helper under TUF (docs/design.md §21.3): the bundle goes as
// upload bytes through trust-refresh, and a desired entry's directive goes with its update.
test("the agent's helper port refreshes the helper's trust and hands over an entry's directive", { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  const port = socketHelper(h.host.paths.helperSock);
  addWeb(h, '1.1.0');
  const a = await port.trustRefresh!(bundleOf(h.repo));
  assert.equal(a.scheme, 'tuf');
  assert.equal(a.timestampVersion, h.repo.timestamp.signed.version);
  const st = await port.status();
  assert.equal(st.trust?.timestampVersion, a.timestampVersion);
  const now = Date.now();
  const attemptId = 'run-1.web.1';
  const entry = {
    app: 'web',
    version: '1.1.0',
    attemptId,
    manifest: envelopeOf(h.manifests.get('1.1.0')!),
    directive: signDirective({ nodeId: NODE_ID, app: 'web', version: '1.1.0', attemptId, issuedAt: now - 1000, notAfter: now + 3_600_000 }, h.repo.keys.director),
  };
  // Without the directive: refused before anything is accepted.
  const { directive: _d, ...without } = entry;
  await assert.rejects(port.update(without as never), (e: unknown) => e instanceof StewardError && e.code === 'TRUST_NOT_DIRECTED');
  assert.equal((await receiptOf(h, attemptId)).reason.code, 'TRUST_NOT_DIRECTED');
  // With it, trust holds and the helper takes the attempt (its bytes come from the manifest's URL,
  // which nobody serves here: what follows is the fetch's, not trust's).
  const second = { ...entry, attemptId: 'run-2.web.1', directive: signDirective({ nodeId: NODE_ID, app: 'web', version: '1.1.0', attemptId: 'run-2.web.1', issuedAt: now - 1000, notAfter: now + 3_600_000 }, h.repo.keys.director) };
  const taken = await port.update(second as never).catch((e: unknown) => e);
  assert.ok(!(taken instanceof StewardError && taken.code.startsWith('TRUST_')), String(taken));
  assert.equal((await web(h)).current, '1.0.0');
});

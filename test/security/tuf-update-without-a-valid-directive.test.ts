import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addWeb, assertUpdateRefused, refresh, tufHost, tufUpdate, web } from '../helpers/tuf-host.js';

// Uptane's director (docs/design.md §21): under TUF a host installs a release of its app's
// delegation only when the director's directive names this node, this app and version and this
// attempt, and holds now. A control plane's database rewritten to point a node at another
// release, or a directive lifted from another node or another attempt, installs nothing.
test('an update with no directive, one for another node, version or attempt, or an expired one is refused TRUST_NOT_DIRECTED and changes nothing', { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  addWeb(h, '1.1.0');
  await refresh(h);
  const now = Date.now();
  const cases: Array<[string, Parameters<typeof tufUpdate>[3], RegExp]> = [
    ['no directive', { omit: true }, /none came with the request/],
    ["another node's", { nodeId: 'node-other' }, /wrong-node/],
    ['for another version', { version: '1.0.0' }, /wrong-version/],
    ['for another attempt', { attemptId: 'run-9.web.9' }, /is for attempt run-9\.web\.9/],
    ['expired', { issuedAt: now - 7_200_000, notAfter: now - 3_600_000 }, /expired/],
    ['issued far ahead of this clock', { issuedAt: now + 3_600_000, notAfter: now + 7_200_000 }, /not-yet-valid/],
  ];
  let n = 0;
  for (const [what, o, why] of cases) {
    const attemptId = `run-1.web.${++n}`;
    await assertUpdateRefused(h, tufUpdate(h, '1.1.0', attemptId, o), attemptId, 'TRUST_NOT_DIRECTED', '1.0.0', '1.1.0', why);
    assert.ok(true, what);
  }
  const ok = await tufUpdate(h, '1.1.0', 'run-2.web.1');
  assert.equal('outcome' in ok && ok.outcome, 'active', JSON.stringify(ok));
  assert.equal((await web(h)).current, '1.1.0');
});

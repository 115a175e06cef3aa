import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StewardError } from '../../src/core/errors.js';
import { createHash } from 'node:crypto';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { addWeb, assertUpdateRefused, envelopeOf, refresh, tufHost, tufUpdate } from '../helpers/tuf-host.js';

// An indexed manifest (docs/design.md §20.2) whose file index is not the target
// `web/<version>/index.json` of web's delegation: a control plane that swaps the index (the files
// a host links into the release tree) for its own. Under TUF the index must be the delegation's
// target, whatever envelope carries it: TRUST_UNSIGNED, nothing staged.
test("an indexed manifest naming an index the delegation does not sign is refused TRUST_UNSIGNED; nothing changes", { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  const signedIndex = Buffer.from('{"the":"index the delegation signs"}');
  const plain = addWeb(h, '1.1.0', { indexBytes: signedIndex });
  await refresh(h);
  const forgedIndex = Buffer.from('{"the":"index of the attacker"}');
  const indexed = (index: Buffer) =>
    envelopeOf(canonicalBytes({ ...JSON.parse(plain.toString('utf8')), index: { url: 'https://releases.invalid/web-1.1.0.index.json', integrity: `sha512-${createHash('sha512').update(index).digest('base64')}`, size: index.length } }));
  await assertUpdateRefused(h, tufUpdate(h, '1.1.0', 'run-1.web.1', { indexedManifest: indexed(forgedIndex) }), 'run-1.web.1', 'TRUST_UNSIGNED', '1.0.0', '1.1.0', /the file index the manifest names is not the target web\/1\.1\.0\/index\.json/);
  // The index the delegation signs passes trust (what the stage makes of it is §20's: here its
  // URL is served by nobody, and the upload is staged).
  const ok = await tufUpdate(h, '1.1.0', 'run-2.web.1', { indexedManifest: indexed(signedIndex) }).catch((e: unknown) => e);
  assert.ok(!(ok instanceof StewardError && ok.code.startsWith('TRUST_')), String(ok));
});

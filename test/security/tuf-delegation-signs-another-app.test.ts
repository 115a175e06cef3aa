import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Metadata, MetadataKind } from '@tufjs/models';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { createHash } from 'node:crypto';
import { signMetadata } from '../../src/platform/trust/tuf-keys.js';
import { manifestFor } from '../helpers/host.js';
import { addRelease, assertUpdateRefused, refresh, tufHost, tufUpdate, webRelease } from '../helpers/tuf-host.js';
import { assertUpdateRefusedViaAgent, entry, repoBundle, serveBundle, trustSnapshot, tufAgentHost } from '../helpers/tuf-agent-host.js';

// One app's delegation signing another app's release: api's keys (the api team's) put
// `web/6.6.6/manifest.json` in app.api's targets. The metadata verifies (it is api's to sign),
// but a host looks for web's targets only under app.web (terminating, paths web/*/*): web 6.6.6
// is no target for it, TRUST_UNSIGNED.
test("a delegation's target for another app's path is not that app's release: TRUST_UNSIGNED, nothing changes", { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  addRelease(h.repo, 'api', '1.0.0', webRelease('1.0.0'), { publish: false });
  const tgz = webRelease('6.6.6');
  const bytes = canonicalBytes(manifestFor('web', '6.6.6', tgz));
  const api = h.repo.apps.get('api')!;
  const json = api.toJSON() as { signed: { version: number; targets: Record<string, unknown> }; signatures: unknown[] };
  json.signed.version += 1;
  json.signed.targets['web/6.6.6/manifest.json'] = { length: bytes.length, hashes: { sha256: createHash('sha256').update(bytes).digest('hex'), sha512: createHash('sha512').update(bytes).digest('hex') } };
  json.signatures = [];
  const forged = Metadata.fromJSON(MetadataKind.Targets, json as never);
  h.repo.keys.apps.get('api')!.slice(0, 2).forEach((k) => signMetadata(forged, k));
  h.repo.apps.set('api', forged);
  h.repo.publish(Date.now());
  const r = await refresh(h);
  assert.ok(r.timestampVersion, 'the metadata itself verifies');
  h.tgz.set('6.6.6', tgz);
  await assertUpdateRefused(h, tufUpdate(h, '6.6.6', 'run-1.web.1', { manifestBytes: bytes }), 'run-1.web.1', 'TRUST_UNSIGNED', '1.0.0', '6.6.6', /web\/6\.6\.6\/manifest\.json is not a target the app\.web delegation signs/);
});

// The same through a real agent: the hostile control plane serves the repository with app.api's
// forged target (newer versions offered): the metadata verifies, and the helper trusts it (it is
// api's to sign). Then it asks for web 6.6.6 with that manifest: the update ends in a signed
// refused receipt TRUST_UNSIGNED, nothing staged.
test("through a real agent: a delegation's target for another app's path is trusted metadata but no release: the update ends in a refused receipt TRUST_UNSIGNED", { timeout: 120_000 }, async (t) => {
  const h = await tufAgentHost(t);
  addRelease(h.repo, 'api', '1.0.0', webRelease('1.0.0'), { publish: false });
  const tgz = webRelease('6.6.6');
  h.cp.artifacts.set('web/6.6.6.tgz', tgz);
  const bytes = canonicalBytes(manifestFor('web', '6.6.6', tgz, { url: `${h.url}/v1/artifacts/web/6.6.6.tgz` }));
  const api = h.repo.apps.get('api')!;
  const json = api.toJSON() as { signed: { version: number; targets: Record<string, unknown> }; signatures: unknown[] };
  json.signed.version += 1;
  json.signed.targets['web/6.6.6/manifest.json'] = { length: bytes.length, hashes: { sha256: createHash('sha256').update(bytes).digest('hex'), sha512: createHash('sha512').update(bytes).digest('hex') } };
  json.signatures = [];
  const forged = Metadata.fromJSON(MetadataKind.Targets, json as never);
  h.repo.keys.apps.get('api')!.slice(0, 2).forEach((k) => signMetadata(forged, k));
  h.repo.apps.set('api', forged);
  h.repo.publish(Date.now());
  const r = await serveBundle(h, repoBundle(h.repo));
  assert.ok(r.ok, `the metadata itself verifies: ${JSON.stringify(r)}`);
  assert.equal((await trustSnapshot(h)).timestampVersion, h.repo.timestamp.signed.version);
  await assertUpdateRefusedViaAgent(h, entry(h, '6.6.6', 'run-1.web.1', { manifestBytes: bytes }), 'TRUST_UNSIGNED', /web\/6\.6\.6\/manifest\.json is not a target the app\.web delegation signs/);
});

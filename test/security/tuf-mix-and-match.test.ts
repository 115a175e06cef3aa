import { test } from 'node:test';
import { metadataBytes, newSnapshot } from '../../src/core/trust/build.js';
import { signMetadata } from '../../src/platform/trust/tuf-keys.js';
import { addWeb, assertRefreshRefused, assertUpdateRefused, bundleOf, tufHost, tufUpdate } from '../helpers/tuf-host.js';
import { addAgentWeb, assertBundleRefused, assertUpdateRefusedViaAgent, entry, repoBundle, tufAgentHost } from '../helpers/tuf-agent-host.js';

// Mix-and-match: metadata from different moments of the repository put together, each file
// validly signed, to make a set the repository never published (a snapshot with a timestamp
// that names another). The timestamp names its snapshot's hash and the snapshot its targets'
// versions: anything else is refused TRUST_MISMATCH.
test('a snapshot that is not the one its timestamp names is refused TRUST_MISMATCH; nothing changes', { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  addWeb(h, '1.1.0');
  const v = h.repo.snapshot.signed.version;
  // Another snapshot of the same version, validly signed, naming web's delegation one version back.
  const other = newSnapshot(new Map([['targets', h.repo.targets.signed.version], ['app.web', h.repo.apps.get('web')!.signed.version - 1]]), v, Date.now() + 1000);
  signMetadata(other, h.repo.keys.snapshot);
  const bundle = bundleOf(h.repo);
  bundle.files[`${v}.snapshot.json`] = metadataBytes(other).toString('base64');
  await assertRefreshRefused(h, bundle, 'TRUST_MISMATCH', /Expected hash/);
  // The delegation of another version than the snapshot names.
  const wrong = bundleOf(h.repo);
  const appV = h.repo.apps.get('web')!.signed.version;
  wrong.files[`${appV}.app.web.json`] = bundleOf(h.repo).files[`${appV - 1}.app.web.json`]!;
  await assertRefreshRefused(h, wrong, 'TRUST_MISMATCH', /does not match snapshot version/);
  await assertUpdateRefused(h, tufUpdate(h, '1.1.0', 'run-1.web.1'), 'run-1.web.1', 'TRUST_UNSIGNED', '1.0.0', '1.1.0');
});

// The same two mixes through a real agent: the hostile control plane offers newer versions and
// serves each; the helper refuses what the agent hands it (TRUST_MISMATCH), and 1.1.0, which only
// the unmixed metadata signs, ends in a signed refused receipt TRUST_UNSIGNED.
test('through a real agent: each mixed bundle is refused TRUST_MISMATCH; the update ends in a refused receipt TRUST_UNSIGNED', { timeout: 120_000 }, async (t) => {
  const h = await tufAgentHost(t);
  addAgentWeb(h, '1.1.0');
  const v = h.repo.snapshot.signed.version;
  const other = newSnapshot(new Map([['targets', h.repo.targets.signed.version], ['app.web', h.repo.apps.get('web')!.signed.version - 1]]), v, Date.now() + 1000);
  signMetadata(other, h.repo.keys.snapshot);
  const bundle = repoBundle(h.repo);
  bundle.files[`${v}.snapshot.json`] = metadataBytes(other).toString('base64');
  await assertBundleRefused(h, bundle, 'TRUST_MISMATCH', /Expected hash/);
  const wrong = repoBundle(h.repo);
  const appV = h.repo.apps.get('web')!.signed.version;
  wrong.files[`${appV}.app.web.json`] = wrong.files[`${appV - 1}.app.web.json`]!;
  await assertBundleRefused(h, wrong, 'TRUST_MISMATCH', /does not match snapshot version/);
  await assertUpdateRefusedViaAgent(h, entry(h, '1.1.0', 'run-1.web.1'), 'TRUST_UNSIGNED', /is not a target the app\.web delegation signs/);
});

import { test } from 'node:test';
import { addWeb, assertRefreshRefused, assertUpdateRefused, bundleOf, tufHost, tufUpdate } from '../helpers/tuf-host.js';

// Endless data: a metadata file far over any real one's size, to exhaust the host's memory or
// disk. tuf-js reads each file up to its cap (16 KiB a timestamp, 512 KiB a root, the length
// the timestamp names for a snapshot): over it, TRUST_TOO_LARGE, and nothing is trusted.
test('a bundle file over its cap is refused TRUST_TOO_LARGE; nothing changes', { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  addWeb(h, '1.1.0');
  const pad = (b64: string, n: number) => Buffer.concat([Buffer.from(b64, 'base64'), Buffer.alloc(n, 0x20)]).toString('base64');
  const big = bundleOf(h.repo);
  big.files['timestamp.json'] = pad(big.files['timestamp.json']!, 20 * 1024);
  await assertRefreshRefused(h, big, 'TRUST_TOO_LARGE', /Max length reached/);
  const root = bundleOf(h.repo);
  root.files['2.root.json'] = pad(root.files['1.root.json']!, 600 * 1024);
  await assertRefreshRefused(h, root, 'TRUST_TOO_LARGE', /Max length reached/);
  const snap = bundleOf(h.repo);
  const v = h.repo.snapshot.signed.version;
  snap.files[`${v}.snapshot.json`] = pad(snap.files[`${v}.snapshot.json`]!, 1024);
  await assertRefreshRefused(h, snap, 'TRUST_TOO_LARGE', /Max length reached/);
  await assertUpdateRefused(h, tufUpdate(h, '1.1.0', 'run-1.web.1'), 'run-1.web.1', 'TRUST_UNSIGNED', '1.0.0', '1.1.0');
});

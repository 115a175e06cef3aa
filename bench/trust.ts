// Row 36 (issue 36, docs/design.md §21): what TUF trust costs.
// - `36 verify`: the fixed cost of trusting one update on the host, warm: the director's directive
//   opened and the release's manifest found as a target of its app's delegation, through tuf-js
//   over the stored metadata verified again from the trusted root (verifyTufUpdate, what a
//   helper does before it stages under `tuf`), against the same stage's check under `keys`
//   (verifyManifest: one Ed25519 signature by a trusted release key). Goal: under 50 ms.
// - `36 resign`: re-signing the fleet's timestamp (resignIfDue on a SQLite store: a new
//   timestamp, signed, inserted, committed), against one bare Ed25519 signature of its bytes;
//   `extra` names what each host then fetches (one bundle, built and sized) and what a fleet of
//   10,000 hosts costs the control plane an hour in bundles.
// `--apps N` apps delegated in the repository (default 100; --quick 10): the snapshot, the
// top-level targets and the bundle grow with it, the verification walks only the app it updates.
// `--releases N` releases of that app signed by its delegation (default 100; --quick 1): its
// targets grow with them, three a release. @tufjs/models 4.1 parsed and serialized both
// quadratically (patches/, docs/trust.md): 740 ms for 300 apps, where it is 37 ms now.
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { canonicalBytes } from '../src/core/canonical-json.js';
import { hostPaths } from '../src/core/paths.js';
import { TIMESTAMP_RESIGN_MS } from '../src/core/trust/roles.js';
import { openStore } from '../src/control/store/open-store.js';
import { trustBundle } from '../src/control/trust/bundle-route.js';
import { resignIfDue } from '../src/control/trust/repository.js';
import { verifyManifest } from '../src/helper/stage/verify-manifest.js';
import { refreshTrust, setTrustedRoot } from '../src/helper/trust/tuf-client.js';
import { verifyTufUpdate } from '../src/helper/trust/verify-tuf-update.js';
import { trustScope } from '../src/platform/trusted-folder.js';
import { signDirective } from '../src/platform/trust/directive.js';
import { FakeClock } from '../test/helpers/control-harness.js';
import { makeHost, makeReleaseKey } from '../test/helpers/host.js';
import { scratchDir } from '../test/helpers/scratch.js';
import { seedRepository } from '../test/helpers/trust-admin.js';
import { makeTufRepo, manifestBytesOf } from '../test/helpers/tuf-repo.js';
import { benchArgs, ms, note, printRow, ratios, series } from './lib.js';

const args = benchArgs(30, 5, ['--apps', '--releases']);
const apps = Number(args.rest.apps ?? (args.quick ? 10 : 100));
const releasesOfWeb = Number(args.rest.releases ?? (args.quick ? 1 : 100));
const NODE_ID = 'node-bench-1';

async function verifyRow(): Promise<void> {
  const now = Date.now();
  const releases = [...Array.from({ length: Math.max(1, releasesOfWeb) }, (_, i) => ({ app: 'web', version: `1.0.${i}` })), ...Array.from({ length: Math.max(0, apps - 1) }, (_, i) => ({ app: `app${i}`, version: '1.0.0' }))];
  const repo = makeTufRepo({ releases, now });
  const dir = scratchDir('steward-bench-trust-');
  const paths = hostPaths(dir);
  // The peer: the same app's manifest under `keys`, on a host that trusts one release key for it.
  const host = makeHost({ apps: {} });
  try {
    mkdirSync(path.dirname(paths.nodeState), { recursive: true, mode: 0o755 });
    writeFileSync(paths.nodeState, JSON.stringify({ schemaVersion: 1, nodeId: NODE_ID }), { mode: 0o600 });
    await setTrustedRoot(paths, repo.files.get('1.root.json') as Buffer, now);
    await refreshTrust(paths, { v: 1, files: Object.fromEntries([...repo.files].map(([n, b]) => [n, b.toString('base64')])) }, now);
    const payload = manifestBytesOf('web', '1.0.0', now);
    const manifest = { payload: payload.toString('base64'), sig: '', keyId: '0'.repeat(16) };
    const directive = signDirective({ nodeId: NODE_ID, app: 'web', version: '1.0.0', attemptId: 'bench-1', issuedAt: now, notAfter: now + 3_600_000 }, repo.keys.director);
    const key = makeReleaseKey(host, ['web']);
    const signed = key.sign(JSON.parse(payload.toString('utf8')) as Parameters<typeof key.sign>[0]);
    const trustedDir = path.join(host.paths.trustedKeysDir, 'web');
    const tuf: number[] = [];
    const keys: number[] = [];
    // Warm: the first of each loads its modules (tuf-js is imported when first needed).
    for (let i = -2; i < args.runs; i++) {
      const t0 = process.hrtime.bigint();
      await verifyTufUpdate(paths, { app: 'web', version: '1.0.0', attemptId: 'bench-1', manifest, directive }, { highestActive: null }, Date.now());
      const a = ms(t0);
      const t1 = process.hrtime.bigint();
      await verifyManifest(signed, { app: 'web', version: '1.0.0', trustedDir, trust: trustScope(trustedDir, host.paths.root), now: Date.now() });
      const b = ms(t1);
      if (i >= 0) {
        tuf.push(a);
        keys.push(b);
      }
    }
    const r = series(ratios(tuf, keys));
    printRow(args, {
      row: '36 verify',
      what: `the fixed cost of trusting one update under tuf (directive, the manifest a target of its app's delegation, the stored metadata verified again from the root; ${apps} apps delegated, ${Math.max(1, releasesOfWeb)} releases of the app) vs under keys (one release-key signature)`,
      unit: 'ms',
      steward: series(tuf),
      peer: series(keys),
      peerWhat: 'verifyManifest under the keys scheme',
      ratio: r,
      target: 'steward <= 50 ms warm',
      met: series(tuf).median <= 50,
    });
  } finally {
    host.cleanup();
    rmSync(dir, { recursive: true, force: true });
    rmSync(repo.dir, { recursive: true, force: true });
  }
}

async function resignRow(): Promise<void> {
  const clock = new FakeClock(Date.now());
  const dir = scratchDir('steward-bench-resign-');
  const store = await openStore(path.join(dir, 'control.db'), { clock, create: true });
  try {
    await seedRepository(store, clock.now(), ['1.0.0']);
    const took: number[] = [];
    const bare: number[] = [];
    const { privateKey } = generateKeyPairSync('ed25519');
    for (let i = -1; i < args.runs; i++) {
      clock.advance(TIMESTAMP_RESIGN_MS);
      const t0 = process.hrtime.bigint();
      const v = await store.write(resignIfDue);
      await store.durable();
      const a = ms(t0);
      if (v === null) throw new Error('no timestamp was due after an hour');
      const latest = await store.read((tx) => tx.trust.latest('timestamp'));
      const bytes = canonicalBytes(JSON.parse(latest?.bytes ?? '{}').signed ?? {});
      const t1 = process.hrtime.bigint();
      sign(null, bytes, privateKey);
      const b = ms(t1);
      if (i >= 0) {
        took.push(a);
        bare.push(b);
      }
    }
    // What each host fetches after a new timestamp: its bundle (from root 1: every file).
    const bundleMs: number[] = [];
    let bundleBytes = 0;
    for (let i = 0; i < Math.max(5, args.runs); i++) {
      const t0 = process.hrtime.bigint();
      const b = await store.read((tx) => trustBundle(tx, 1));
      bundleMs.push(ms(t0));
      bundleBytes = Buffer.byteLength(JSON.stringify(b));
    }
    const perBundle = series(bundleMs).median;
    printRow(args, {
      row: '36 resign',
      what: "re-signing the fleet's timestamp (a new version signed, inserted, committed on SQLite) vs one bare Ed25519 signature of its bytes",
      unit: 'ms',
      steward: series(took),
      peer: series(bare),
      peerWhat: 'one Ed25519 signature',
      ratio: series(ratios(took, bare)),
      target: 'none: a figure (hourly, once per fleet)',
      met: true,
      extra: { bundleMs: perBundle, bundleBytes, fleetBundleCpuSecondsPerHourAt10000Hosts: Math.round((perBundle * 10_000) / 100) / 10 },
    });
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  await verifyRow();
  await resignRow();
}

main().catch((err) => {
  note(args, `bench/trust failed: ${(err as Error).stack ?? String(err)}`);
  process.exitCode = 1;
});

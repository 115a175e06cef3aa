// The signed file index as the default (docs/design.md §20.2), with a real steward-control and a real
// host (helper and agent) in its own root. `release add --base-url` signs the plain manifest and
// the indexed one; the host's agent names `indexedManifest` in its desired-fields header, hands it
// to its helper, and the helper stages the second release from the index and a pack of what it
// lacks (`agentctl status --json` says so: lastTransfer.via = objects). An indexed manifest whose
// signature was changed in the database is refused by the host with a signed receipt naming it,
// and nothing of that release is staged.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../../src/control/store/open-store.js';
import { versionDir } from '../../src/core/paths.js';
import { appFiles } from '../fixtures/app-releases.js';
import { gzipTar, makeTar } from '../fixtures/tar-writer.js';
import { controlNodes, controlReceipts, controlRuns } from '../helpers/control-read.js';
import { controlJson, startControlDaemon, waitUntil, type Daemon } from '../helpers/fleet.js';
import { agentctl } from '../helpers/host.js';
import { enrollAndStart, makeFleetHost, removeFleetHost, type FleetHost } from '../helpers/fleet-hosts.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-fleet-indexed-'));
const db = path.join(dir, 'control.db');
let host: FleetHost | null = null;
let control: (Daemon & { url: string }) | null = null;

after(async () => {
  if (host) await removeFleetHost(host);
  await control?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const ctl = (...args: string[]): Promise<any> => controlJson(db, args);

async function runEnded(version: string): Promise<any> {
  await waitUntil(`the run of ${version} to end`, 90_000, async () => {
    const [run] = await controlRuns(db, 'web');
    return run && run.version === version && run.status !== 'running' ? true : undefined;
  });
  return (await ctl('rollout', 'status', 'web')).runs[0];
}

// 64 KiB that do not compress, the same in every version: the part a host keeps.
const SHARED = randomBytes(48 * 1024).toString('base64');

// A runnable release of web (no probe, no port: the host stays up for stableMs) that shares all
// but its release file with every other version. The health block holds stableMs alone: without
// one, the helper's default of 5 s applies (src/helper/update/app-process.ts probeSpecOf).
function release(version: string): Buffer {
  const manifest = { name: 'web', version, start: { command: ['node', 'server.js'], env: { PORT: '0', BEHAVIOR: JSON.stringify({ probe: 'none', stableMs: 300 }) } }, health: { stableMs: 300 } };
  return gzipTar(makeTar([{ path: 'steward-release.json', content: JSON.stringify(manifest) }, ...appFiles(), { path: 'lib/shared.js', content: SHARED }]));
}

test('a host of today stages the second release from its signed index through the control plane; a changed indexed manifest is refused with a receipt', { timeout: 300_000 }, async () => {
  control = await startControlDaemon(db, 0, 1);
  const web = await ctl('keys', 'create', '--out', path.join(dir, 'keys'), '--name', 'web');
  host = await makeFleetHost('h-1', ['web'], web.publicKeyFile);
  await enrollAndStart(host, control.url, (await ctl('token', 'create')).token);
  for (const v of ['1.0.0', '1.1.0', '1.2.0']) {
    const file = path.join(dir, `web-${v}.tgz`);
    writeFileSync(file, release(v));
    const added = await ctl('release', 'add', 'web', v, '--file', file, '--base-url', control.url, '--key', web.privateKeyFile);
    assert.ok(added.indexedManifest, `${v}: release add made the indexed manifest by default`);
  }
  await waitUntil('the node to heartbeat its apps', 30_000, async () => ((await controlNodes(db)).some((n) => n.apps.length > 0) ? true : undefined));

  // 1.0.0: the host has none of it, so the tarball (the index said more than half is missing).
  await ctl('rollout', 'start', 'web', '1.0.0', '--bake', '0', '--batch', '100%');
  assert.equal((await runEnded('1.0.0')).status, 'succeeded');
  const first = (await agentctl(host.host, ['status', 'web', '--json'])).json.apps[0];
  assert.deepEqual([first.current, first.lastTransfer?.via, first.lastTransfer?.indexed], ['1.0.0', 'tarball', true], JSON.stringify(first.lastTransfer));

  // 1.1.0: only its release file is new: the index and a pack of one object.
  await ctl('rollout', 'start', 'web', '1.1.0', '--bake', '0', '--batch', '100%');
  assert.equal((await runEnded('1.1.0')).status, 'succeeded');
  const second = (await agentctl(host.host, ['status', 'web', '--json'])).json.apps[0];
  assert.deepEqual([second.current, second.lastTransfer?.version, second.lastTransfer?.via, second.lastTransfer?.indexed], ['1.1.0', '1.1.0', 'objects', true], JSON.stringify(second.lastTransfer));
  assert.ok(second.lastTransfer.fetchedBytes < second.lastTransfer.reusedBytes / 4, JSON.stringify(second.lastTransfer));

  // 1.2.0's indexed manifest, its signature changed in the database (the control plane sends
  // it: it never checks signatures, the host does).
  const store = await openStore(db);
  try {
    await store.write(async (tx) => {
      const row = (await tx.releases.get('web', '1.2.0'))!;
      const sig = Buffer.from(row.indexedManifest!.sig, 'base64');
      sig[5] = (sig[5] as number) ^ 0xff;
      await tx.releases.upsert({ ...row, indexedManifest: { ...row.indexedManifest!, sig: sig.toString('base64') } });
    });
  } finally {
    await store.close();
  }
  await ctl('rollout', 'start', 'web', '1.2.0', '--bake', '0', '--batch', '100%', '--max-refused', '0');
  const refused = await runEnded('1.2.0');
  assert.equal(refused.status, 'halted', JSON.stringify(refused, null, 2));
  const receipt = (await controlReceipts(db, 'web')).find((r) => r.targetVersion === '1.2.0');
  assert.deepEqual([receipt?.outcome, receipt?.reasonCode], ['refused', 'SIGNATURE_INVALID'], JSON.stringify(receipt));
  assert.match(receipt?.reasonMessage ?? '', /the indexed manifest of web 1\.2\.0/);
  assert.equal(existsSync(versionDir(host.host.paths, 'web', '1.2.0')), false, 'nothing of 1.2.0 was staged');
  assert.equal((await agentctl(host.host, ['status', 'web', '--json'])).json.apps[0].current, '1.1.0');
});

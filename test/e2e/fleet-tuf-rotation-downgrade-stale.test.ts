// Issue 36 end to end beyond one release (docs/trust.md, docs/design.md §21): a real
// steward-control and a real host on TUF (helpers/fleet-tuf.ts: the repository made by the
// operator's commands, the host enrolled with the exported root). One control plane and host
// for every step, in order:
// a. a root rotation (`trust rotate`, `trust sign-root` by a threshold of the old keys and of the
//    new ones): the host walks to root v2, reports it, and installs a release signed after it;
// b. a downgrade: refused by the host without the delegation's `downgrade.json` target, installed
//    with `release allow-downgrade --key w1 --key w2`;
// c. a compromised director (runs written straight into the database, directives signed by the
//    stolen online key): it picks among signed releases at or above the host's floor, as the
//    design says it can, and a signed release below the floor is still refused, even with an
//    authorization one delegation key signed (no target: not the delegation's word);
// d. metadata-stale: a timestamp last signed 3 h ago (what a control plane that stopped
//    re-signing serves) makes the host report its age, and the node is flagged in `nodes --json`
//    and counted by steward_nodes_metadata_stale; a fresh one clears both.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../../src/control/store/open-store.js';
import { forgeRun } from '../helpers/forge-run.js';
import { onlineKeys } from '../../src/control/trust/repository.js';
import { metadataBytes, newTimestamp } from '../../src/core/trust/build.js';
import { DOMAINS, parsePrivateKey, signEnvelope } from '../../src/platform/keys.js';
import { signMetadata } from '../../src/platform/trust/tuf-keys.js';
import { freePort } from '../fixtures/app-releases.js';
import { controlReceipts } from '../helpers/control-read.js';
import { waitUntil } from '../helpers/fleet.js';
import { startTufFleet, type TufFleet } from '../helpers/fleet-tuf.js';
import { agentctl } from '../helpers/host.js';
import { writeKeyPair } from '../helpers/trust-cli.js';

const DAY = 86_400_000;
const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-fleet-tuf-more-'));
let fleet: TufFleet | null = null;

after(async () => {
  await fleet?.stop();
  rmSync(dir, { recursive: true, force: true });
});


// A timestamp signed with the control plane's own timestamp key, as of `signedAt`, naming the
// newest snapshot, stored as published now (so the server's re-signing, due an hour after that,
// does not replace it while the test looks).
async function publishTimestampSignedAt(f: TufFleet, signedAt: number): Promise<number> {
  const store = await openStore(f.db);
  try {
    return await store.write(async (tx) => {
      const keys = (await onlineKeys(tx))!;
      const snap = (await tx.trust.latest('snapshot'))!;
      const version = (await tx.trust.latest('timestamp'))!.version + 1;
      const ts = newTimestamp(Buffer.from(snap.bytes, 'utf8'), snap.version, version, signedAt);
      signMetadata(ts, keys.timestamp.key);
      assert.ok(await tx.trust.publish({ role: 'timestamp', version, bytes: metadataBytes(ts).toString('utf8'), createdAt: await tx.now() }));
      return version;
    });
  } finally {
    await store.close();
  }
}

test('root rotation, an authorized downgrade, a compromised director and metadata-stale, on a real host', { timeout: 300_000 }, async () => {
  const metricsPort = await freePort();
  const f = (fleet = await startTufFleet(dir, { releases: ['1.0.0', '1.1.0'], controlArgs: ['--metrics-listen', `127.0.0.1:${metricsPort}`] }));
  const { ctl, op, keys } = f;
  const { host, nodeId, agent } = f.hosts[0]!;
  const rolloutTo = async (v: string, ...flags: string[]) => {
    await ctl('rollout', 'start', 'web', v, '--bake', '0', '--batch', '100%', ...flags);
    return f.runEnded();
  };
  const receiptOf = async (attemptId: string) => (await controlReceipts(f.db, 'web')).find((r) => r.attemptId === attemptId);

  // a. Carol's root key is rotated out for Gina's. Alice and Gina sign first: the new root's
  // threshold is met, the current root's is not (Gina's key is not one of it), so nothing is
  // published; Bob's signature meets both.
  const rg = writeKeyPair(dir, 'root-gina');
  const rotated = await op('trust', 'rotate', '--keys', `${keys.ra.pub},${keys.rb.pub},${rg.pub}`);
  assert.match(rotated.stdout, /signing it needs both thresholds: 2 of root v1's keys/, rotated.stdout);
  assert.match((await op('trust', 'sign-root', '--key', keys.ra.key)).stdout, /another key holder runs/);
  const gina = await op('trust', 'sign-root', '--key', rg.key);
  assert.doesNotMatch(gina.stdout, /published root v2/, gina.stdout);
  assert.equal((await f.status()).pending.root?.version, 2, 'still pending: one of root v1\'s keys signed');
  assert.match((await op('trust', 'sign-root', '--key', keys.rb.key)).stdout, /published root v2/);
  assert.equal((await f.status()).root.version, 2);
  const [rotatedNode] = await waitUntil('the node to report root v2', 60_000, async () => {
    const ns = await f.nodes();
    return ns[0]?.trust?.rootVersion === 2 ? ns : undefined;
  });
  assert.deepEqual([rotatedNode.trust.scheme, rotatedNode.metadataStale], ['tuf', false], JSON.stringify(rotatedNode));
  const st = await agentctl(host, ['status', '--json']);
  assert.equal(st.json.trust.rootVersion, 2, JSON.stringify(st.json.trust));
  // A release signed after the rotation installs.
  await f.addRelease('1.2.0');
  const r120 = await rolloutTo('1.2.0');
  assert.equal(r120.status, 'succeeded', `${JSON.stringify(r120, null, 2)}\n${agent.stderr().slice(-4000)}`);
  assert.deepEqual(await f.webOnHosts(), ['1.2.0/1.2.0']);

  // b. Back to 1.1.0: without the delegation's downgrade.json the host refuses and says what
  // authorizes it; with `release allow-downgrade` signed by the delegation's threshold, it goes.
  const refused = await rolloutTo('1.1.0', '--max-refused', '0');
  assert.equal(refused.status, 'halted', JSON.stringify(refused, null, 2));
  const canary = refused.nodes.find((x: { state: string }) => x.state === 'refused');
  assert.equal(canary?.reason, 'DOWNGRADE_REFUSED', JSON.stringify(refused.nodes));
  const no = await receiptOf(canary.attemptId);
  assert.deepEqual([no?.outcome, no?.reasonCode], ['refused', 'DOWNGRADE_REFUSED'], JSON.stringify(no));
  assert.match(no?.reasonMessage ?? '', /`steward-control release allow-downgrade web 1\.1\.0 --key <a key of app\.web> --key <another>\.\.\.`, with a threshold of the app\.web delegation's keys, adds the target web\/1\.1\.0\/downgrade\.json/, String(no?.reasonMessage));
  assert.deepEqual(await f.webOnHosts(), ['1.2.0/1.2.0'], 'nothing moved');
  await op('release', 'allow-downgrade', 'web', '1.1.0', '--key', keys.w1.key, '--key', keys.w2.key);
  const back = await rolloutTo('1.1.0');
  assert.equal(back.status, 'succeeded', `${JSON.stringify(back, null, 2)}\n${agent.stderr().slice(-4000)}`);
  assert.deepEqual(await f.webOnHosts(), ['1.1.0/1.1.0'], 'the authorized version is the new floor');
  const yes = await receiptOf(back.nodes[0].attemptId);
  assert.deepEqual([yes?.outcome, yes?.reasonCode], ['active', 'DOWNGRADE_AUTHORIZED'], JSON.stringify(yes));
  assert.match(yes?.reasonMessage ?? '', /web\/1\.1\.0\/downgrade\.json/, String(yes?.reasonMessage));

  // c. The control plane compromised: runs written into its database, each directive signed by
  // its director key. A signed release at or above the floor is the director's choice to make:
  // 1.3.0 installs. A signed release below the floor does not, even with an authorization signed
  // by one of the delegation's own keys stored beside it: only the target downgrade.json is the
  // delegation's word.
  await f.addRelease('1.3.0');
  // The forged run once the node trusts the metadata that lists 1.3.0: the director's choice is
  // between releases the host can know of. Handed in the same answer as the new timestamp, its
  // verification may meet the helper's bound on trust-refresh (4, then one per 15 s:
  // src/helper/trust/refresh-gate.ts) after the refreshes above, and be refused TRUST_UNSIGNED
  // against the older metadata; while each update stayed up 5 s (test/fixtures/app-releases.ts),
  // the bound had refilled by then.
  const listing = (await f.status()).timestamp.version as number;
  await waitUntil(`the node to trust timestamp v${listing}, which lists 1.3.0`, 60_000, async () => {
    const [n] = await f.nodes();
    return (n?.trust?.timestampVersion ?? 0) >= listing ? true : undefined;
  });
  const [up] = await forgeRun(f.db, f.hosts.map((h) => h.nodeId), 1, '1.3.0');
  const upReceipt = await waitUntil('the receipt of the forged 1.3.0', 60_000, async () => receiptOf(up!));
  assert.equal(upReceipt.outcome, 'active', JSON.stringify(upReceipt));
  assert.deepEqual(await f.webOnHosts(), ['1.3.0/1.3.0']);
  const w1Signed = signEnvelope(DOMAINS.downgrade, { app: 'web', version: '1.0.0', notAfter: Date.now() + 2 * DAY }, parsePrivateKey(readFileSync(keys.w1.key, 'utf8')));
  const [down] = await forgeRun(f.db, f.hosts.map((h) => h.nodeId), 2, '1.0.0', w1Signed);
  const downReceipt = await waitUntil('the receipt of the forged 1.0.0', 60_000, async () => receiptOf(down!));
  assert.deepEqual([downReceipt.outcome, downReceipt.reasonCode], ['refused', 'DOWNGRADE_REFUSED'], JSON.stringify(downReceipt));
  assert.match(downReceipt.reasonMessage ?? '', /web\/1\.0\.0\/downgrade\.json/, String(downReceipt.reasonMessage));
  assert.deepEqual(await f.webOnHosts(), ['1.3.0/1.3.0'], 'never below the floor');
  assert.deepEqual(readdirSync(path.join(host.paths.appsDir, 'web/versions')).sort(), ['1.1.0', '1.2.0', '1.3.0'], 'nothing of 1.0.0 was staged again');

  // d. metadata-stale: the newest timestamp was signed 3 h ago.
  const stale = async () => Number(/^steward_nodes_metadata_stale (\d+)$/m.exec(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text())?.[1]);
  assert.equal(await stale(), 0);
  const old = await publishTimestampSignedAt(f, Date.now() - 3 * 3_600_000);
  const staleNode = await waitUntil('the node to report the old timestamp and be flagged', 60_000, async () => {
    const [n] = await f.nodes();
    return n?.trust?.timestampVersion === old && n.metadataStale === true ? n : undefined;
  });
  assert.ok(staleNode.trust.timestampAgeSeconds >= 3 * 3600 - 5, JSON.stringify(staleNode.trust));
  await waitUntil('steward_nodes_metadata_stale to count it', 30_000, async () => ((await stale()) === 1 ? true : undefined));
  const fresh = await publishTimestampSignedAt(f, Date.now());
  await waitUntil('the node to be fresh again', 60_000, async () => {
    const [n] = await f.nodes();
    return n?.trust?.timestampVersion === fresh && n.metadataStale === false ? true : undefined;
  });
  await waitUntil('steward_nodes_metadata_stale back to 0', 30_000, async () => ((await stale()) === 0 ? true : undefined));
  void nodeId;
});

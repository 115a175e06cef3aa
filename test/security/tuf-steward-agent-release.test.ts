import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { StewardError } from '../../src/core/errors.js';
import { AGENT_APP } from '../../src/core/names.js';
import { trustedKeysFor, versionDir } from '../../src/core/paths.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { signDirective } from '../../src/platform/trust/directive.js';
import { callHelper } from '../../src/protocol/client.js';
import { helperClient } from '../../src/protocol/helper-client.js';
import { appRelease, freePort } from '../fixtures/app-releases.js';
import { helperReceipts } from '../helpers/helper-status.js';
import { useHost } from '../helpers/host-fixture.js';
import { makeReleaseKey, manifestFor, processApp } from '../helpers/host.js';
import { addRelease, bundleOf, envelopeOf } from '../helpers/tuf-host.js';
import { makeTufRepo } from '../helpers/tuf-repo.js';

// The attack: on a host whose scheme is `tuf`, the control plane (its database, its online keys)
// sends the agent a release of steward-agent, the program that holds the node key and speaks for
// the host, that no key of the `app.steward-agent` delegation signed, only a release key the host
// even trusts in trusted-keys/steward-agent/ (docs/trust.md, "steward itself"). The agent is
// delivered as its own app release, so it is held to its delegation and the director as any app
// (docs/design.md §21.3): refused TRUST_UNSIGNED with a signed receipt, nothing staged. The
// delegation's release, directed, installs with no release key on the host.
const NODE_ID = 'node-agent-tuf';

test('on a tuf host a steward-agent release its delegation does not sign is refused TRUST_UNSIGNED, and one it signs and the director directs installs without a release key', { timeout: 120_000 }, async (t) => {
  const host = useHost(t, { apps: { [AGENT_APP]: processApp({ stopTimeoutMs: 2000 }) } });
  const key = makeReleaseKey(host, [AGENT_APP]);
  mkdirSync(path.dirname(host.paths.nodeState), { recursive: true, mode: 0o755 });
  writeFileSync(host.paths.nodeState, JSON.stringify({ schemaVersion: 1, nodeId: NODE_ID }), { mode: 0o600 });
  await host.startHelper();
  const helperSock = helperClient((request, o) => callHelper(host.paths.helperSock, request, o));
  const adminSock = helperClient((request, o) => callHelper(host.paths.adminSock, request, o));
  const repo = makeTufRepo({ releases: [] });
  const root = repo.files.get('1.root.json')!;
  await adminSock.trustSetRoot({ upload: root.length }, { upload: { size: root.length, stream: Readable.from([root]) } });
  const tgz = appRelease(AGENT_APP, '1.1.0', await freePort());
  const publish = async (version: string, bytes: Buffer): Promise<Buffer> => {
    const m = addRelease(repo, AGENT_APP, version, bytes);
    const bundle = Buffer.from(JSON.stringify(bundleOf(repo)));
    await helperSock.trustRefresh({ upload: bundle.length }, { upload: { size: bundle.length, stream: Readable.from([bundle]) } });
    return m;
  };
  const update = (version: string, attemptId: string, bytes: Buffer, manifest: Envelope) => {
    const now = Date.now();
    const directive = signDirective({ nodeId: NODE_ID, app: AGENT_APP, version, attemptId, issuedAt: now - 1000, notAfter: now + 3_600_000 }, repo.keys.director);
    return helperSock.update({ app: AGENT_APP, version, manifest, attemptId, upload: bytes.length, by: 'steward-agent', directive }, { upload: { size: bytes.length, stream: Readable.from([bytes]) } });
  };
  const receipt = async (attemptId: string) => {
    const all = await helperReceipts(host.root, AGENT_APP);
    assert.deepEqual(all.filter((r) => !r.verified), [], 'every receipt verifies against helper.pub');
    return all.map((r: any) => r.payload ?? r).find((p: any) => p.attemptId === attemptId);
  };

  // app.steward-agent delegated, signing another version; 1.1.0 signed by the trusted release key only.
  await publish('1.0.0', appRelease(AGENT_APP, '1.0.0', await freePort()));
  await assert.rejects(update('1.1.0', 'run-1.agent.1', tgz, key.sign(manifestFor(AGENT_APP, '1.1.0', tgz))), (err: unknown) => {
    assert.ok(err instanceof StewardError, String(err));
    assert.equal(err.code, 'TRUST_UNSIGNED', err.message);
    assert.match(err.message, /steward-agent\/1\.1\.0\/manifest\.json is not a target the app\.steward-agent delegation signs/);
    return true;
  });
  const refused = await receipt('run-1.agent.1');
  assert.deepEqual([refused?.outcome, refused?.reason?.code], ['refused', 'TRUST_UNSIGNED'], JSON.stringify(refused));
  assert.equal(existsSync(versionDir(host.paths, AGENT_APP, '1.1.0')), false, 'nothing staged');

  // The delegation's release, directed, with no release key for steward-agent on the host.
  rmSync(trustedKeysFor(host.paths, AGENT_APP), { recursive: true, force: true });
  const m = await publish('1.1.0', tgz);
  const up = await update('1.1.0', 'run-2.agent.1', tgz, envelopeOf(m));
  assert.equal('outcome' in up && up.outcome, 'active', JSON.stringify(up));
  assert.equal((await receipt('run-2.agent.1'))?.outcome, 'active');
  await adminSock.stop({ app: AGENT_APP });
});

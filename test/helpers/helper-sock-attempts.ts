import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stagingDir, versionDir } from '../../src/core/paths.js';
import { allReceipts } from './app-processes.js';
import { useHost, type HostFixture, type TeardownScope } from './host-fixture.js';
import { agentctl, makeReleaseKey, manifestFor, processApp, type CliResult, type HelperProcess, type ReleaseKey } from './host.js';

// A real steward-helper on a temp host whose app `web` trusts a release key, driven the way the
// agent drives it for a rollout: `update` over helper.sock with a signed manifest, the tarball
// streamed as an upload, and the control plane's attemptId.

export interface SignedHost {
  host: HostFixture;
  helper: HelperProcess;
  key: ReleaseKey;
}

// The host, its key and its helper (`env` for the helper: the fault seam, say), torn down by
// `scope` (host-fixture.ts).
export async function signedHost(scope: TeardownScope, env: Record<string, string> = {}): Promise<SignedHost> {
  const host = useHost(scope, { apps: { web: processApp() } });
  const key = makeReleaseKey(host, ['web']);
  const helper = await host.startHelper(env);
  return { host, helper, key };
}

// `agentctl update <app> <version> --manifest M --file TGZ --attempt-id ID` over helper.sock;
// `tgz` is signed for `app` by the host's release key whatever it holds.
export async function updateOverHelperSock(s: SignedHost, app: string, version: string, tgz: Buffer, attemptId: string): Promise<CliResult> {
  const file = path.join(s.host.scratch, `${app}-${version}-${attemptId}.tgz`);
  const manifest = path.join(s.host.scratch, `${app}-${version}-${attemptId}.manifest.json`);
  writeFileSync(file, tgz);
  writeFileSync(manifest, JSON.stringify(s.key.sign(manifestFor(app, version, tgz))));
  return agentctl(s.host, ['update', app, version, '--manifest', manifest, '--file', file, '--attempt-id', attemptId, '--socket', s.host.paths.helperSock, '--json']);
}

// The signed receipt of an attempt, as `agentctl receipts` verifies and lists it (every app).
export async function receiptOf(s: SignedHost, attemptId: string): Promise<any> {
  const { code, receipts } = await allReceipts(s.host);
  assert.equal(code, 0, 'agentctl receipts');
  const mine = receipts.filter((r) => r.payload.attemptId === attemptId);
  assert.equal(mine.length, 1, `exactly one receipt for ${attemptId}: ${JSON.stringify(receipts.map((r) => r.payload))}`);
  return mine[0].payload;
}

// What a failed stage must leave: no staging folder content and no versions/<version>.
export function assertNothingStaged(s: SignedHost, app: string, version: string): void {
  const staging = stagingDir(s.host.paths, app);
  assert.deepEqual(existsSync(staging) ? readdirSync(staging) : [], [], 'nothing is left in .staging');
  assert.equal(existsSync(versionDir(s.host.paths, app, version)), false, `versions/${version} does not exist`);
}

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { checkRefusals } from '../../src/helper/stage/refusals.js';
import { packageVersionOf } from '../../src/helper/self/trial-state.js';
import { selfFloors } from '../../src/helper/self/self-floors.js';
import type { SelfSeams } from '../../src/helper/self/self-seams.js';
import { agentctl } from '../helpers/host.js';
import { cleanedUpAfter, currentOf, makeSelfHost, startLauncher, stewardRelease, waitReady } from '../helpers/self-host.js';

// The attack: a member of group steward (the agent, so whoever controls the control plane) asks
// over helper.sock for `update steward 0.0.9`, a validly signed older release, on a host whose
// steward runs the package's 1.0.0 and never committed a self-update (so no version of steward
// was ever `active` and the highest-active refusal had nothing to compare with). The older
// helper would commit on trial and run as root. Refused: steward's update never goes below the
// package's version or the version the helper runs (docs/self-update.md, "Floors").

const { children, hosts } = cleanedUpAfter();

test('update steward to an older signed release over helper.sock is DOWNGRADE_REFUSED on a host that never self-updated, and nothing is handed over', { timeout: 120_000 }, async () => {
  const h = await makeSelfHost('1.0.0', { apps: { steward: { runner: 'self', stableMs: 0 } } });
  hosts.push(h);
  const helper = startLauncher(h);
  children.push(helper);
  const ready = await waitReady(h, helper);
  const self = ready.apps.find((a: any) => a.name === 'steward');
  assert.equal(self.self.decision, 'package');
  assert.equal(self.highestActive, null, 'no version of steward was ever active here');

  const rel = await stewardRelease(h, '0.0.9', 'good');
  const overHelperSock = await agentctl(h, ['--socket', h.paths.helperSock, 'update', 'steward', '0.0.9', '--file', rel.tgz, '--manifest', rel.manifest, '--json']);
  assert.equal(overHelperSock.json?.error?.code, 'DOWNGRADE_REFUSED', overHelperSock.stdout + overHelperSock.stderr);
  assert.match(overHelperSock.json.error.message, /steward 0\.0\.9 is below 1\.0\.0/);
  assert.equal(overHelperSock.code, 3);

  // Root insisting over admin.sock does not go below the package either: that is apt's.
  const insisted = await agentctl(h, ['update', 'steward', '0.0.9', '--file', rel.tgz, '--manifest', rel.manifest, '--allow-downgrade', '--json']);
  assert.equal(insisted.json?.error?.code, 'DOWNGRADE_REFUSED', insisted.stdout + insisted.stderr);
  assert.match(insisted.json.error.message, /installed package/);

  // Nothing was handed over: no candidate, no current, the same helper answers.
  assert.equal(existsSync(path.join(h.paths.selfDir, 'candidate')), false);
  assert.equal(currentOf(h), null);
  assert.equal(helper.exitCode, null, 'the helper still runs');
  const after = await waitReady(h, helper);
  assert.equal(after.pid, ready.pid);
  assert.equal(after.apps.find((a: any) => a.name === 'steward').lastAttempt, null);
});

// The rule over both sockets, table-tested: which floors a request may go below.
const seams = (ownVersion: string, env: Record<string, string>, launched: SelfSeams['launched']): SelfSeams =>
  ({ ownVersion, launched, packageVersion: packageVersionOf(env, launched) }) as SelfSeams;
const noState = { previous: null, highestActive: null, quarantine: {} } as never;

const cases: Array<{ name: string; self: SelfSeams; highestActive: string | null; version: string; kind: 'helper' | 'admin'; allowDowngrade?: boolean; refused: boolean }> = [
  { name: 'below the package on helper.sock', self: seams('1.0.0', {}, { decision: 'package', version: '1.0.0' }), highestActive: null, version: '0.0.9', kind: 'helper', refused: true },
  { name: 'forward from the package on helper.sock', self: seams('1.0.0', {}, { decision: 'package', version: '1.0.0' }), highestActive: null, version: '1.0.1', kind: 'helper', refused: false },
  { name: 'below the running release, above the package (STEWARD_PACKAGE_VERSION), on helper.sock', self: seams('2.0.0', { STEWARD_PACKAGE_VERSION: '1.0.0' }, { decision: 'current', version: '2.0.0' }), highestActive: null, version: '1.5.0', kind: 'helper', refused: true },
  { name: 'the same, by root insisting over admin.sock', self: seams('2.0.0', { STEWARD_PACKAGE_VERSION: '1.0.0' }, { decision: 'current', version: '2.0.0' }), highestActive: '2.0.0', version: '1.5.0', kind: 'admin', allowDowngrade: true, refused: false },
  { name: 'below the package by root insisting over admin.sock', self: seams('2.0.0', { STEWARD_PACKAGE_VERSION: '1.0.0' }, { decision: 'current', version: '2.0.0' }), highestActive: '2.0.0', version: '0.9.0', kind: 'admin', allowDowngrade: true, refused: true },
  { name: 'below the package after a fallback, whose launcher passed no package version, on helper.sock', self: seams('1.0.0', {}, { decision: 'fallback', version: '1.0.0' }), highestActive: '2.0.0', version: '0.5.0', kind: 'helper', refused: true },
  { name: 'below the running version when asked for allowDowngrade over helper.sock', self: seams('1.2.0', {}, null), highestActive: null, version: '1.1.0', kind: 'helper', allowDowngrade: true, refused: true },
];

for (const c of cases) {
  test(`an update of steward ${c.version} ${c.name} is ${c.refused ? 'DOWNGRADE_REFUSED' : 'let through'}`, () => {
    const run = () =>
      checkRefusals({
        app: 'steward',
        version: c.version,
        state: { ...(noState as object), highestActive: c.highestActive } as never,
        now: 0,
        kind: c.kind,
        allowDowngrade: c.allowDowngrade,
        floors: selfFloors(c.self),
      });
    if (c.refused) assert.throws(run, { code: 'DOWNGRADE_REFUSED' });
    else assert.doesNotThrow(run);
  });
}

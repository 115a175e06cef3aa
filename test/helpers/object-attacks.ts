import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { objectsDir, stagingDir, versionDir } from '../../src/core/paths.js';
import { listObjects } from '../../src/platform/object-store.js';
import { verifyApp } from '../../src/helper/ops/verify.js';
import { hostWithCurrent, type StagedHost } from './stage-harness.js';
import { startObjectServer, type ObjectServer } from './object-server.js';

// A host with web 0.9.0 current and a control plane's artifact routes, for the attacks on the
// objects path (docs/design.md §20).
export async function objectAttackHost(configExtra: Record<string, unknown> = {}): Promise<{ s: StagedHost; srv: ObjectServer; cleanup(): void }> {
  const s = await hostWithCurrent(configExtra);
  const srv = await startObjectServer();
  return {
    s,
    srv,
    cleanup() {
      srv.close();
      s.host.cleanup();
    },
  };
}

// The objects present (names), for a before/after comparison.
export async function objectNames(s: StagedHost): Promise<string[]> {
  return (await listObjects(objectsDir(s.host.paths, 'web'))).objects.map((o) => o.name);
}

// The promise of every attack: nothing left in .staging/, every object in objects/ holds the bytes
// its name says (so nothing there a later stage would wrongly trust), every kept tree as staged.
export async function assertNothingUntrusted(s: StagedHost, absent?: string): Promise<void> {
  assert.deepEqual(readdirSync(stagingDir(s.host.paths, 'web')), [], '.staging/ is empty');
  const v = await verifyApp(s.host.paths, 'web');
  assert.deepEqual(v.problems, [], 'every object and tree is what it says');
  if (absent) assert.throws(() => statSync(versionDir(s.host.paths, 'web', absent)), `versions/${absent} does not exist`);
}

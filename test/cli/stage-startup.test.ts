import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { BIN } from '../helpers/host.js';
import { bundleOf, isClassicZod, modulesResolvedBy } from '../helpers/module-list.js';

// `agentctl stage` and `update` with --file load no classic zod (~100 ms of start-up, issue 8
// row 1), and no schema but the answer lines' (zod/mini): only --manifest needs the envelope
// schema, and loads it then. Each runs the real CLI under
// a loader hook listing every module it resolves; under an empty root it fails to reach a
// helper, after building its request. agentctl runs its bundle (docs/design.md §15): the files it loads
// are mapped back to the modules they hold by the bundle's metafile.
const NO_ROOT = path.join(os.tmpdir(), 'steward-no-such-root');
const INTEGRITY = `sha512-${'A'.repeat(86)}==`;

// The modules agentctl loads with `args`, under a loader hook.
function agentctlModules(args: string[]): { modules: string[]; status: number | null; stderr: string } {
  const hooked = modulesResolvedBy([BIN.agentctl, ...args]);
  const { sources, outside } = bundleOf('agentctl').loaded(hooked.modules, [BIN.agentctl]);
  assert.deepEqual(outside, [], "agentctl loads no file but its launcher and its bundle's");
  return { ...hooked, modules: sources };
}

for (const op of ['stage', 'update']) {
  test(`agentctl ${op} --file loads no classic zod and no release schema`, () => {
    const { modules, stderr } = agentctlModules(['--root', NO_ROOT, op, 'web', '1.0.0', '--file', '/no/such.tgz', '--integrity', INTEGRITY, '--allow-unsigned', '--json']);
    assert.ok(modules.some((u) => u.endsWith('/cli/release-source.js')), `the hook saw the request built:\n${stderr}`);
    assert.deepEqual(modules.filter(isClassicZod), [], `agentctl ${op} loads classic zod`);
    for (const heavy of ['/core/release-schemas.js', '/core/names.js', '/node_modules/tar/']) {
      assert.deepEqual(modules.filter((u) => u.includes(heavy)), [], `agentctl ${op} loads ${heavy}`);
    }
  });
}

test('agentctl stage --manifest still checks the envelope with the schema', (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-stage-startup-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'manifest.json');
  writeFileSync(file, JSON.stringify({ payload: 'x', sig: 1 }));
  const { modules, status, stderr } = agentctlModules(['--root', NO_ROOT, 'stage', 'web', '1.0.0', '--manifest', file]);
  assert.notEqual(status, 0);
  assert.match(stderr, /--manifest .*: not a signature envelope/);
  assert.ok(modules.some((u) => u.endsWith('/core/release-schemas.js')), 'the schema was loaded for --manifest');
});

import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from '../helpers/host.js';
import { bundleOf, isClassicZod, isZodMini, modulesResolvedBy } from '../helpers/module-list.js';

// An idle helper's RSS is mostly what it loaded (issue 8 row 5): execa alone was ~100 modules and
// ~10 MB, classic zod ~11 MB, and a module once loaded stays. The helper's start must load
// neither, and no path of the helper may load execa at all: `sync -f` after a stage, systemctl
// and journalctl run through node:child_process (platform/exec.ts). Its shapes are zod/mini
// schemas (docs/design.md §15; test/helper/zod-free-paths.test.ts follows a helper's life with a loader
// hook). The helper runs its bundle (docs/design.md §15): what its start loads is a list of the bundle's
// files, mapped back by the bundle's metafile to the modules each one holds.
const bundle = bundleOf('steward-helper');

function startModules(): string[] {
  const { modules, stderr } = modulesResolvedBy(['--input-type=module', '-e', `await import(${JSON.stringify(bundle.entry)})`]);
  const { sources, outside } = bundle.loaded(modules);
  assert.ok(sources.includes(path.join(REPO, 'dist/src/helper/main.js')), `the hook saw the helper's bundle load:\n${stderr}`);
  assert.deepEqual(outside, [], 'the helper loads no file but its bundle\'s');
  return sources;
}

test("the helper's start loads no file but its bundle's, no execa, and zod/mini but no classic zod", () => {
  const sources = startModules();
  assert.deepEqual(sources.filter((u) => u.includes('/node_modules/execa/')), []);
  assert.ok(sources.some(isZodMini), 'the files loaded hold zod/mini');
  assert.deepEqual(sources.filter(isClassicZod), []);
});

test('no path of the helper, however rare, imports execa or classic zod', () => {
  // Every output of the build: the entry, every chunk it may load later, the extraction worker.
  const sources = bundle.sources();
  const packages = new Set(sources.filter((s) => s.includes('/node_modules/')).map((s) => s.split('/node_modules/')[1]!.split('/')[0]));
  assert.ok(sources.length > 100 && packages.has('zod') && packages.has('tar'), `the bundle holds the helper's modules (${sources.length}), zod/mini and the worker's tar`);
  assert.ok(!packages.has('execa'), `packages bundled: ${[...packages].sort().join(', ')}`);
  assert.deepEqual(sources.filter(isClassicZod), [], 'classic zod is bundled');
});

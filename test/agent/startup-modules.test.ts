import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from '../helpers/host.js';
import { bundleOf, modulesResolvedBy } from '../helpers/module-list.js';

// An idle agent's RSS was ~10 MB over issue 8's 50 MB target while it loaded zod (row 5): what it
// parses on its idle path (answers, its files, the config, receipts) is read by zod-free checkers,
// and zod is imported only where a rare path needs it (enrollment, the words of a refused config).
// The agent runs its bundle (DESIGN §15), whose start must load no other file and reach no zod.
test("the agent's start loads no file but its bundle's, and no zod", () => {
  const bundle = bundleOf('steward-agent');
  const { modules, stderr } = modulesResolvedBy(['--input-type=module', '-e', `await import(${JSON.stringify(bundle.entry)})`]);
  const { sources, outside } = bundle.loaded(modules);
  assert.ok(sources.includes(path.join(REPO, 'dist/src/agent/main.js')), `the hook saw the agent's bundle load:\n${stderr}`);
  assert.deepEqual(outside, [], "the agent loads no file but its bundle's");
  assert.deepEqual(sources.filter((u) => u.includes('/node_modules/zod/')), []);
  // The control: zod is in the bundle, in a chunk loaded only when needed.
  assert.ok(bundle.sources().some((u) => u.includes('/node_modules/zod/')), 'zod is bundled for the rare paths');
});

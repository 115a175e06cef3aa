import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from '../helpers/host.js';
import { bundleOf, isClassicZod, isZodMini, modulesResolvedBy } from '../helpers/module-list.js';

// An idle agent's RSS was ~10 MB over issue 8's 50 MB target while it loaded classic zod (row 5).
// Every shape it reads is one zod/mini schema (docs/design.md §15), a few MB lighter, less again once
// bundled; classic zod must not come back into its module graph. The agent runs its bundle
// (docs/design.md §15), whose start must load no other file.
test("the agent's start loads no file but its bundle's, with zod/mini and no classic zod", () => {
  const bundle = bundleOf('steward-agent');
  const { modules, stderr } = modulesResolvedBy(['--input-type=module', '-e', `await import(${JSON.stringify(bundle.entry)})`]);
  const { sources, outside } = bundle.loaded(modules);
  assert.ok(sources.includes(path.join(REPO, 'dist/src/agent/main.js')), `the hook saw the agent's bundle load:\n${stderr}`);
  assert.deepEqual(outside, [], "the agent loads no file but its bundle's");
  assert.ok(sources.some(isZodMini), 'the files loaded hold zod/mini');
  assert.deepEqual(sources.filter(isClassicZod), []);
});

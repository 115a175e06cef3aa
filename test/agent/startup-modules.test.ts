import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from '../helpers/host.js';
import { isClassicZod, isZodMini, modulesResolvedBy } from '../helpers/module-list.js';

// An idle agent's RSS was ~10 MB over issue 8's 50 MB target while it loaded classic zod (row 5).
// Every shape it reads is one zod/mini schema (DESIGN §15), a few MB lighter, less again once
// bundled; classic zod must not come back into its module graph.
test("the agent's modules include zod/mini and no classic zod", () => {
  const main = path.join(REPO, 'dist/src/agent/main.js');
  const { modules, stderr } = modulesResolvedBy(['--input-type=module', '-e', `await import(${JSON.stringify(main)})`]);
  assert.ok(modules.some((u) => u.endsWith('/agent/main.js')), `the hook saw the agent load:\n${stderr}`);
  assert.ok(modules.some(isZodMini), 'the hook saw zod/mini load');
  assert.deepEqual(modules.filter(isClassicZod), []);
});

import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from '../helpers/host.js';
import { modulesResolvedBy } from '../helpers/module-list.js';

// An idle agent's RSS was ~10 MB over issue 8's 50 MB target while it loaded zod (row 5): what it
// parses on its idle path (answers, its files, the config, receipts) is read by zod-free checkers,
// and zod is imported only where a rare path needs it (enrollment, the words of a refused config).
// The agent's static module graph must not reach zod.
test("the agent's modules do not include zod", () => {
  const main = path.join(REPO, 'dist/src/agent/main.js');
  const { modules, stderr } = modulesResolvedBy(['--input-type=module', '-e', `await import(${JSON.stringify(main)})`]);
  assert.ok(modules.some((u) => u.endsWith('/agent/main.js')), `the hook saw the agent load:\n${stderr}`);
  assert.deepEqual(modules.filter((u) => u.includes('/node_modules/zod/')), []);
});

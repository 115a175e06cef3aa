import assert from 'node:assert/strict';
import path from 'node:path';
import os from 'node:os';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BIN } from '../helpers/host.js';
import { bundleOf, isClassicZod, isZodMini, modulesResolvedBy } from '../helpers/module-list.js';

// What `agentctl status` loads is most of its start-up time (bench/status-cli, issue 8 row 6):
// classic zod alone was ~100 ms of CPU a run. This runs the real CLI under a loader hook that
// lists every module it resolves (it fails to reach a helper under an empty root, so the error
// path is loaded too), and holds that status reaches none of the heavy ones: zod/mini for the
// answer lines (protocol/answer-schemas.ts), never classic zod nor the request schemas. agentctl
// runs its bundle (docs/design.md §15): the files it loads are mapped back to the modules they hold by
// the bundle's metafile.
test('agentctl status loads zod/mini but no classic zod, nor the modules of other commands', () => {
  const bundle = bundleOf('agentctl');
  const hooked = modulesResolvedBy([BIN.agentctl, '--root', path.join(os.tmpdir(), 'steward-no-such-root'), 'status', '--json']);
  const { sources: modules, outside } = bundle.loaded(hooked.modules, [BIN.agentctl]);
  assert.ok(modules.some((u) => u.endsWith('/cli/commands/status.js')), `the hook saw the CLI load:\n${hooked.stderr}`);
  assert.deepEqual(outside, [], "agentctl loads no file but its launcher and its bundle's");
  assert.deepEqual(modules.filter((u) => u.includes('/cli/commands/')).map((u) => path.basename(u)), ['status.js'], 'no other command is loaded');
  assert.ok(modules.some(isZodMini), 'the files loaded hold zod/mini');
  assert.deepEqual(modules.filter(isClassicZod), [], 'agentctl status loads classic zod');
  // zod/mini's parts that no schema calls: bundled only when a module imports zod's namespace
  // object (`{ z }`) instead of its functions (src/core/zod-mini.ts).
  const zodUnused = ['/zod/v4/core/to-json-schema.js', '/zod/v4/core/json-schema-processors.js', '/zod/v4/core/compile.js'];
  for (const heavy of ['/node_modules/tar/', '/node_modules/execa/', '/node_modules/proper-lockfile/', '/node_modules/debug/', '/protocol/schemas.js', '/core/names.js', ...zodUnused]) {
    assert.deepEqual(modules.filter((u) => u.includes(heavy)), [], `agentctl status loads ${heavy}`);
  }
  // Its entry and its command's runner, one file each (src/cli/main.ts): each file of an ES
  // module graph costs Node 20 about 1 ms.
  const files = [...new Set(hooked.modules.filter((u) => u.startsWith('file:') && fileURLToPath(u).startsWith(bundle.dir + path.sep)))].map((u) => path.basename(fileURLToPath(u)));
  assert.deepEqual(files.sort(), ['agentctl.js', 'run-status.js'], 'agentctl status loads its entry and its runner, no chunk');
});

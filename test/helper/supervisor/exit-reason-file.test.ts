import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { ensureLayout } from '../../../src/helper/layout.js';
import { readExitReason, removeExitReason, writeExitReason } from '../../../src/helper/supervisor/exit-reason-file.js';
import { stateFile } from '../../../src/core/paths.js';
import { makeHost, processApp } from '../../helpers/host.js';

test("an exit's reason is shown only for the exit it was written for", async (t) => {
  const host = makeHost({ apps: { web: processApp() } });
  t.after(() => host.cleanup());
  await ensureLayout(host.paths);
  assert.equal(await readExitReason(host.paths, 'web', 1_800_000_000_000), undefined, 'none written');
  await writeExitReason(host.paths, { schemaVersion: 1, app: 'web', pid: 42, at: 1_800_000_000_000, reason: 'WATCHDOG' });
  assert.equal(await readExitReason(host.paths, 'web', 1_800_000_000_000), 'WATCHDOG');
  // The record's exit is a later one (a crash between the two writes, or an ordinary exit since).
  assert.equal(await readExitReason(host.paths, 'web', 1_800_000_000_001), undefined);
  assert.equal(await readExitReason(host.paths, 'web', null), undefined);
  // A file that does not read (hostile or torn) is no reason, not an error.
  writeFileSync(stateFile(host.paths, 'web').replace(/\.json$/, '.exit.json'), '{"schemaVersion":1,"app":"web","pid":42,"at":1800000000000,"reason":"EVIL"}');
  assert.equal(await readExitReason(host.paths, 'web', 1_800_000_000_000), undefined);
  await removeExitReason(host.paths, 'web');
  await removeExitReason(host.paths, 'web');
});

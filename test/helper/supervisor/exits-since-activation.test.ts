import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { ensureLayout } from '../../../src/helper/layout.js';
import { countExit, readExits, reasonOf, removeExits } from '../../../src/helper/supervisor/exits-since-activation.js';
import { stateFile } from '../../../src/core/paths.js';
import { makeHost, processApp } from '../../helpers/host.js';

const T = 1_800_000_000_000;

test('exits are counted since the last activation, and a reason is shown only for the exit it was written for', async (t) => {
  const host = makeHost({ apps: { web: processApp() } });
  t.after(() => host.cleanup());
  await ensureLayout(host.paths);
  assert.equal(await readExits(host.paths, 'web'), null, 'none heard');
  assert.equal(reasonOf(null, T), undefined);
  await countExit(host.paths, 'web', { pid: 41, at: T - 10 });
  await countExit(host.paths, 'web', { pid: 42, at: T, reason: 'WATCHDOG' });
  const exits = await readExits(host.paths, 'web');
  assert.equal(exits?.restarts, 2);
  assert.equal(reasonOf(exits, T), 'WATCHDOG');
  // The record's exit is another one (a crash between the two writes, or an exit since).
  assert.equal(reasonOf(exits, T + 1), undefined);
  assert.equal(reasonOf(exits, null), undefined);
  await countExit(host.paths, 'web', { pid: 43, at: T + 5 });
  assert.equal(reasonOf(await readExits(host.paths, 'web'), T + 5), undefined, 'an ordinary exit after it has no reason');
  // An activation starts the count again.
  await removeExits(host.paths, 'web');
  await removeExits(host.paths, 'web');
  assert.equal(await readExits(host.paths, 'web'), null);
  await countExit(host.paths, 'web', { pid: 44, at: T + 9 });
  assert.equal((await readExits(host.paths, 'web'))?.restarts, 1);
});

test('an exits file that does not read (hostile or torn) counts as none and is replaced by the next exit', async (t) => {
  const host = makeHost({ apps: { web: processApp() } });
  t.after(() => host.cleanup());
  await ensureLayout(host.paths);
  const file = stateFile(host.paths, 'web').replace(/\.json$/, '.exits.json');
  writeFileSync(file, JSON.stringify({ schemaVersion: 1, app: 'web', restarts: 3, last: { pid: 42, at: T, reason: 'EVIL' } }));
  assert.equal(await readExits(host.paths, 'web'), null);
  writeFileSync(file, JSON.stringify({ schemaVersion: 1, app: 'api', restarts: 3, last: null }));
  assert.equal(await readExits(host.paths, 'web'), null, "another app's count is not this one's");
  await countExit(host.paths, 'web', { pid: 45, at: T });
  assert.deepEqual(await readExits(host.paths, 'web'), { schemaVersion: 1, app: 'web', restarts: 1, last: { pid: 45, at: T } });
});

// A warm extraction worker is given the next stage's archive only after a job that ended
// cleanly: one that met a hostile archive (and may hold whatever that archive left in its
// heap, or a file it had open) is ended, so the next stage gets a fresh thread.
import assert from 'node:assert/strict';
import { promises as fsp, readdirSync } from 'node:fs';
import { test } from 'node:test';
import { extractArchive } from '../../src/platform/tarball.js';
import { DEFAULT_LIMITS, expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

const threads = (): Set<string> => new Set(readdirSync('/proc/self/task'));

test('the warm worker that refused a hostile archive is ended, never kept for the next archive', async (t) => {
  const good = await makeSandbox();
  const bad = await makeSandbox();
  t.after(() => Promise.all([good, bad].map(removeSandbox)));
  await fsp.writeFile(good.archive, gzipTar(makeReleaseTar('web', '1.0.0')));
  const before = threads();
  await extractArchive({ archivePath: good.archive, dest: good.dest, limits: DEFAULT_LIMITS });
  const kept = [...threads()].filter((id) => !before.has(id));
  assert.equal(kept.length, 1, 'the worker of a clean job is kept warm');
  // An entry whose path holds '..': refused by the rules inside the worker.
  const hostile = makeReleaseTar('web', '1.0.1', [{ path: 'a/../../outside/victim.txt', content: 'pwned' }]);
  await expectRefused(bad, gzipTar(hostile), /'\.\.' component/);
  assert.ok(!threads().has(kept[0] as string), 'the warm worker took the hostile job and was ended after it');
});

// Staging starts its extraction worker as it begins to obtain the bytes (the worker's start-up
// overlaps the copy and its hash) and never leaves it behind: a stage that fails before it
// extracts ends the worker before it returns.
import assert from 'node:assert/strict';
import { promises as fsp } from 'node:fs';
import { test } from 'node:test';
import path from 'node:path';
import { stagingDir, versionDir } from '../../../src/core/paths.js';
import type { StageIO } from '../../../src/helper/stage/stage-io.js';
import { realStageIO } from '../../../src/helper/stage/real-stage-io.js';
import { hostWithCurrent, stageBytes, type StagedHost } from '../../helpers/stage-harness.js';
import { releaseTgz } from '../../fixtures/releases.js';

// Real staging IO that logs the order of its calls.
function loggingIO(log: string[]): StageIO {
  return {
    ...realStageIO,
    copyLocalToFile: async (o) => {
      log.push('copy');
      return realStageIO.copyLocalToFile(o);
    },
    copyLocalToMemory: async (o) => {
      log.push('copy');
      return realStageIO.copyLocalToMemory(o);
    },
    prepareExtraction: () => {
      log.push('prepare');
      const p = realStageIO.prepareExtraction();
      return {
        extract: (o) => {
          log.push('extract');
          return p.extract(o);
        },
        extractStream: (o) => {
          log.push('extractStream');
          return p.extractStream(o);
        },
        cancel: async () => {
          await p.cancel();
          log.push('cancelled');
        },
      };
    },
  };
}

async function withHost(t: import('node:test').TestContext): Promise<StagedHost> {
  const s = await hostWithCurrent();
  t.after(() => s.host.cleanup());
  return s;
}

test('the worker is started before the bytes are copied and given the job after', async (t) => {
  const s = await withHost(t);
  const log: string[] = [];
  s.deps.io = loggingIO(log);
  assert.equal(await stageBytes(s, releaseTgz('web', '2.0.0')), null);
  assert.deepEqual(log.slice(0, 3), ['prepare', 'copy', 'extract']);
});

test('a stage refused before extraction ends the started worker before it returns', async (t) => {
  const s = await withHost(t);
  const log: string[] = [];
  s.deps.io = loggingIO(log);
  const err = await stageBytes(s, releaseTgz('web', '2.0.0'), { integrity: `sha512-${'A'.repeat(86)}==` });
  assert.equal(err?.code, 'INTEGRITY_MISMATCH');
  assert.deepEqual(log, ['prepare', 'copy', 'cancelled']);
});

test('a worker that fails on an archive held in memory fails the stage with IO_ERROR and leaves nothing', async (t) => {
  const s = await withHost(t);
  s.deps.io = {
    ...realStageIO,
    prepareExtraction: () => {
      const p = realStageIO.prepareExtraction();
      return {
        // The real worker, made to fail: the folder it must create its tree in does not exist.
        extract: async (o) => {
          assert.ok(o.archive, 'the stage held the archive in memory');
          return p.extract({ ...o, dest: path.join(path.dirname(o.dest), 'gone', 'tree') });
        },
        extractStream: (o) => p.extractStream(o),
        cancel: () => p.cancel(),
      };
    },
  };
  const err = await stageBytes(s, releaseTgz('web', '2.0.0'));
  assert.equal(err?.code, 'IO_ERROR');
  assert.match(err?.message ?? '', /staging web 2\.0\.0: extracting the archive held in memory into .*ENOENT/);
  assert.deepEqual(await fsp.readdir(stagingDir(s.host.paths, 'web')), []);
  await assert.rejects(fsp.lstat(versionDir(s.host.paths, 'web', '2.0.0')));
});

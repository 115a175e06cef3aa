// Staging starts its extraction worker as it begins to obtain the bytes (the worker's start-up
// overlaps the copy and its hash) and never leaves it behind: a stage that fails before it
// extracts ends the worker before it returns.
import assert from 'node:assert/strict';
import { test } from 'node:test';
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
    prepareExtraction: () => {
      log.push('prepare');
      const p = realStageIO.prepareExtraction();
      return {
        extract: (o) => {
          log.push('extract');
          return p.extract(o);
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

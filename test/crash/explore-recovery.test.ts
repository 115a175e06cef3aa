import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readJournal } from '../../src/helper/update/journal.js';
import { agentctl, startHelper } from '../helpers/host.js';
import { formatViolations, killProcessesUnder } from './explorer.js';
import { APP, exploreHelperScenario, sleepReleaseArgs } from './helper-scenario.js';
import { requireStrace } from './settings.js';

// Issue 7, item 1, recovery itself: a helper died (SIGKILL at after-start-new) with the journal
// in `activating`; the next helper's start, traced, points current back, starts 2.0.0 and writes
// rolled-back with its receipt. A power cut during that recovery must be recoverable too.
test('every crash state of a recovery from an interrupted activation recovers again', async (t) => {
  if (!requireStrace(t)) return;
  const { x } = await exploreHelperScenario(t, 'recovery of an interrupted activation', {
    installed: ['1.0.0', '2.0.0'],
    prepare: async (host) => {
      const faulty = await startHelper(host, { STEWARD_FAULTS: 'after-start-new' });
      await agentctl(host, ['update', APP, '3.0.0', ...sleepReleaseArgs(host, '3.0.0'), '--attempt-id', 'crash-interrupted', '--json']);
      if (faulty.child.exitCode === null && faulty.child.signalCode === null) await once(faulty.child, 'exit');
      assert.equal(faulty.child.signalCode, 'SIGKILL', 'the helper died at the kill point');
      await killProcessesUnder(host.root);
      const j = await readJournal(host.paths, APP);
      assert.equal(j.state === 'ok' && j.journal.outcome, 'activating', 'the journal was left activating');
    },
    // The traced helper's start is the recovery; nothing else is asked of it.
    act: async () => {},
    expect: async (_r, host) => {
      const j = await readJournal(host.paths, APP);
      assert.equal(j.state === 'ok' && j.journal.outcome, 'rolled-back', 'the traced start recovered the activation');
    },
  });
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
});

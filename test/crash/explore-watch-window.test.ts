import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentctl, startHelper, type TestHost } from '../helpers/host.js';
import { formatViolations, killProcessesUnder } from './explorer.js';
import { APP, exploreHelperScenario, sleepReleaseArgs } from './helper-scenario.js';
import { requireStrace } from './settings.js';

// The watch window's rollback (docs/design.md §17): 2.0.0 passed its activation and opened a window
// that allows no exit; the traced helper starts it, it is killed, and the helper rolls it back to
// 1.0.0 as a new attempt (UNHEALTHY_AFTER_ACTIVATION). Every crash state of that run recovers to a
// consistent host: 2.0.0 still active with its window, or back on 1.0.0 with a terminal journal and
// its receipt.

async function status(host: TestHost): Promise<any> {
  const r = await agentctl(host, ['status', APP, '--json']);
  return r.json?.apps?.[0] ?? null;
}

test('every crash state of a rollback by the watch window recovers', async (t) => {
  if (!requireStrace(t)) return;
  const { x } = await exploreHelperScenario(t, 'rollback by the watch window', {
    installed: ['1.0.0'],
    prepare: async (host) => {
      const helper = await startHelper(host);
      try {
        const r = await agentctl(host, ['update', APP, '2.0.0', ...sleepReleaseArgs(host, '2.0.0', true, { watchMs: 600_000, watchMaxRestarts: 0 }), '--json']);
        assert.equal(r.json?.outcome, 'active', r.stdout + r.stderr);
      } finally {
        await helper.stop();
        await killProcessesUnder(host.root);
      }
    },
    act: async (host) => {
      // The traced helper's first pass started 2.0.0 again; its window is open.
      let st = await status(host);
      for (let i = 0; i < 100 && !(st?.supervisor?.pid && st.watch); i++) {
        await new Promise((r) => setTimeout(r, 50));
        st = await status(host);
      }
      assert.equal(st?.watch?.version, '2.0.0', JSON.stringify(st));
      process.kill(st.supervisor.pid, 'SIGKILL');
      for (let i = 0; i < 200; i++) {
        st = await status(host);
        if (st?.current === '1.0.0' && st.lastAttempt?.outcome === 'rolled-back' && st.supervisor?.state === 'running') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      return agentctl(host, ['status', APP, '--json']);
    },
    expect: (r) => {
      const a = r?.json?.apps?.[0];
      assert.deepEqual([a?.current, a?.lastAttempt?.outcome, a?.lastAttempt?.reason?.code], ['1.0.0', 'rolled-back', 'UNHEALTHY_AFTER_ACTIVATION'], JSON.stringify(a));
    },
  });
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
});

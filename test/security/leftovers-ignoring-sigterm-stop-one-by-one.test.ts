import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, releaseArgs } from '../fixtures/app-releases.js';
import { recordedPid, registeredDaemons } from '../helpers/app-processes.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { waitFor } from '../helpers/systemd-container.js';

// Attack: an app whose processes all ignore SIGTERM. The helper stopped what was left of an app
// one process at a time, each with the full stop timeout before its SIGKILL: N such processes
// kept an update (the app down all the while) or a stop waiting N timeouts, 10 s each by
// default. Stopping what is left of an app takes one timeout in all: SIGTERM to every process at
// once, SIGKILL to all that are left when it runs out. Seen here without a clock: each process,
// on its SIGTERM, counts how many of its siblings are still alive; stopped one by one, the later
// ones find the earlier ones already killed.

const N = 4;

test('a stop sends SIGTERM to every process of the app before it SIGKILLs any of them', { timeout: 90_000 }, async (t) => {
  // The timeout is long enough for every handler to run on a loaded machine; only the order counts.
  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 3000 }) } });
  const stateDir = path.join(host.paths.appStateRoot, 'web');
  await host.startHelper();
  const port = await freePort();
  const up = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port, { daemons: N, daemonsIgnoreSigterm: true, stableMs: 200 }), '--json']);
  assert.equal(up.code, 0, up.stdout + up.stderr);
  const main = recordedPid(host, 'web');
  assert.ok(main);
  await waitFor(`${N} daemons`, async () => registeredDaemons(stateDir).filter((d) => d.main === main && d.alive).length === N, 15_000, 20);

  const stop = await agentctl(host, ['stop', 'web', '--json']);
  assert.equal(stop.code, 0, stop.stdout + stop.stderr);
  assert.deepEqual(registeredDaemons(stateDir).filter((d) => d.alive), [], 'the stop left processes running');
  const terms = readFileSync(path.join(stateDir, 'terms.log'), 'utf8').trim().split('\n');
  const seen = terms.map((l) => Number(l.split(' ')[1]));
  assert.deepEqual(seen, Array(N).fill(N), `each process saw all ${N} alive at its SIGTERM (one line per process: "<pid> <alive>"):\n${terms.join('\n')}`);
});

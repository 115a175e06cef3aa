// A window that closes mid-run stops issuing and resumes at the next one (docs/design.md §11), end to
// end: real helpers and agents in temp roots, the real control plane in this process on a clock
// the test moves (the system's time plus an offset, kept within the 5 minutes of clock skew a
// heartbeat is allowed).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { addRelease } from '../../src/control/catalog/add-release.js';
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { describeRun, type RunStatusView } from '../../src/control/rollouts/run-status.js';
import { startRun } from '../../src/control/rollouts/start-run.js';
import { appRelease } from '../fixtures/app-releases.js';
import { FakeClock, startControlInProcess, type Control } from '../helpers/control-harness.js';
import { waitUntil } from '../helpers/fleet.js';
import { currentOn, enrollAndStart, makeFleetHost, removeFleetHost, type FleetHost } from '../helpers/fleet-hosts.js';

const MIN = 60_000;

// The system's time plus an offset the test sets; sleeps are real.
class OffsetClock extends FakeClock {
  offset = 0;
  constructor() {
    super(Date.now());
    this.now = () => Date.now() + this.offset;
    this.sleep = (ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, ms);
        signal?.addEventListener('abort', () => (clearTimeout(t), reject(signal.reason)), { once: true });
      });
  }
  // Moves the clock to `at`.
  jumpTo(at: number): void {
    this.offset = at - Date.now();
    assert.ok(Math.abs(this.offset) < 4.5 * MIN, `the offset stays within the heartbeat's clock skew (${this.offset} ms)`);
  }
}

const hosts: FleetHost[] = [];
let c: Control | null = null;
after(async () => {
  for (const h of hosts) await removeFleetHost(h);
  await c?.close();
});

const hhmm = (t: number) => new Date(t).toISOString().slice(11, 16);

test('a window that closes mid-run stops issuing, and the run resumes at the next window', { timeout: 180_000 }, async () => {
  const clock = new OffsetClock();
  c = await startControlInProcess({ clock, heartbeatSeconds: 1, tickMs: 200 });
  const ctl = c;
  const pub = path.join(ctl.dir, 'release.pub');
  writeFileSync(pub, ctl.releaseKey.publicPem);
  for (const name of ['a', 'b']) hosts.push(await makeFleetHost(name, ['web'], pub));
  for (const h of hosts) await enrollAndStart(h, ctl.server.url, await ctl.token());
  const file = path.join(ctl.dir, 'web-1.0.0.tgz');
  writeFileSync(file, appRelease('web', '1.0.0', 0, { probe: 'none', stableMs: 300 }));
  await addRelease(ctl.store, { app: 'web', version: '1.0.0', file, url: null, baseUrl: ctl.server.url, privateKeyPem: ctl.releaseKey.privatePem, expiresDays: 30, artifactsDir: artifactsDirOf(ctl.dbFile) });
  await waitUntil('both nodes to report web', 30_000, async () => ((await ctl.store.read((tx) => tx.nodes.list())).every((n) => n.apps.length > 0) ? true : undefined));

  // Two windows: the one open now (this minute to three minutes on), and one a minute after it.
  const m0 = Math.floor(clock.now() / MIN) * MIN;
  const windows = [`daily ${hhmm(m0)}-${hhmm(m0 + 3 * MIN)}`, `daily ${hhmm(m0 + 4 * MIN)}-${hhmm(m0 + 6 * MIN)}`];
  await startRun(ctl.store, 'web', '1.0.0', { windows, bakeMs: 20_000, batch: '1', verdictTimeoutMs: 10 * MIN });
  const view = (): Promise<RunStatusView> => ctl.store.read(async (tx) => describeRun(tx, (await tx.runs.latest('web'))!));
  const first = await waitUntil('the canary to confirm', 60_000, async () => {
    const v = await view();
    return v.counts.confirmed === 1 ? v : undefined;
  });
  const [canaryNode] = first.canaryNodes;
  const other = hosts.find((h) => h.nodeId !== canaryNode)!;
  assert.equal(first.nodes.find((n) => n.nodeId === canaryNode)?.notAfter, m0 + 3 * MIN, 'its attempt carried the window end');

  // The window closes, its bake long passed: nothing more is issued.
  clock.jumpTo(m0 + 3 * MIN + 10_000);
  await new Promise((r) => setTimeout(r, 3000));
  let v = await view();
  assert.deepEqual([v.status, v.nextWindowAt, v.nodes.find((n) => n.nodeId === other.nodeId)?.state], ['waiting', m0 + 4 * MIN, 'pending']);
  assert.equal(await currentOn(other, 'web'), null, 'the other host was not asked');

  // The next window opens: the run goes on there.
  clock.jumpTo(m0 + 4 * MIN);
  v = await waitUntil('the other host to confirm in the next window', 60_000, async () => {
    const x = await view();
    return x.counts.confirmed === 2 ? x : undefined;
  });
  assert.equal(v.nodes.find((n) => n.nodeId === other.nodeId)?.notAfter, m0 + 6 * MIN);
  assert.equal(await currentOn(other, 'web'), '1.0.0');
});

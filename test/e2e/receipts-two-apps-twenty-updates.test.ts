import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { allReceipts } from '../helpers/app-processes.js';
import { fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';

const APPS = ['web', 'api'] as const;
const UPDATES = 20;

test('two apps updated 20 times each at once: 40 receipts, seqs strictly increasing in write order, none missing', { timeout: 240_000 }, async (t) => {
  const ports = { web: await freePort(), api: await freePort() };
  const h = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }), api: processApp({ stopTimeoutMs: 1000 }) } });
  await h.startHelper();

  // Two sequential loops, run concurrently: the helper allocates seqs for both apps at once.
  const run = async (app: (typeof APPS)[number]) => {
    for (let i = 1; i <= UPDATES; i++) {
      const version = `${i}.0.0`;
      const r = await agentctl(h, ['update', app, version, ...releaseArgs(h.scratch, app, version, ports[app], { stableMs: 100 }), '--json']);
      assert.equal(r.code, 0, `${app} ${version}: ${r.stderr}${r.stdout}`);
      assert.equal(r.json.outcome, 'active');
    }
  };
  await Promise.all([run('web'), run('api')]);
  assert.equal(await fetchVersion(ports.web), `${UPDATES}.0.0`);
  assert.equal(await fetchVersion(ports.api), `${UPDATES}.0.0`);

  const { code, receipts } = await allReceipts(h);
  assert.equal(code, 0, 'every receipt verifies against helper.pub');
  assert.ok(receipts.every((r) => r.verified));
  assert.equal(receipts.length, 2 * UPDATES);
  assert.deepEqual(
    receipts.map((r) => r.seq).sort((a, b) => a - b),
    Array.from({ length: 2 * UPDATES }, (_, i) => i + 1),
    'seqs are exactly 1..40, each once',
  );

  for (const app of APPS) {
    const mine = receipts.filter((r) => r.payload.app === app);
    assert.equal(mine.length, UPDATES);
    // Ordered by the version each attempt installed (the order the loop ran them), seqs rise.
    const byAttempt = [...mine].sort((a, b) => Number(a.payload.targetVersion.split('.')[0]) - Number(b.payload.targetVersion.split('.')[0]));
    assert.deepEqual(byAttempt.map((r) => r.payload.targetVersion), Array.from({ length: UPDATES }, (_, i) => `${i + 1}.0.0`));
    for (let i = 1; i < byAttempt.length; i++) {
      assert.ok(byAttempt[i].seq > byAttempt[i - 1].seq, `${app}: ${byAttempt[i].payload.targetVersion} has seq ${byAttempt[i].seq} after ${byAttempt[i - 1].seq}`);
    }
    // The receipts file holds them in the order they were written: seqs strictly rise there too.
    const file = JSON.parse(readFileSync(path.join(h.paths.receiptsDir, `${app}.json`), 'utf8'));
    const written = file.receipts.map((e: { payload: string }) => JSON.parse(Buffer.from(e.payload, 'base64').toString('utf8')).seq);
    assert.equal(written.length, UPDATES);
    for (let i = 1; i < written.length; i++) assert.ok(written[i] > written[i - 1], `${app}: receipts file order ${written.join(',')}`);
  }

  const status = await agentctl(h, ['status', '--json']);
  for (const a of status.json.apps) assert.equal(a.current, `${UPDATES}.0.0`);
});

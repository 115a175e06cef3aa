import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { callHelper } from '../../src/protocol/client.js';
import { assertStillAnswers, startTestServers, type TestServers } from '../helpers/api-server-harness.js';

const ATTACKER = fileURLToPath(new URL('../fixtures/open-idle-connections.js', import.meta.url));

let s: TestServers;
before(async () => (s = await startTestServers({ idleTimeoutMs: 2000, maxConnections: 64 })));
after(() => s.close());

function median(xs: number[]): number {
  const a = [...xs].sort((x, y) => x - y);
  return a[Math.floor(a.length / 2)]!;
}

async function timedStatus(id: number): Promise<number> {
  const t0 = performance.now();
  assert.deepEqual(await callHelper(s.helperSock, { v: 1, id, op: 'status' }, { timeoutMs: 5000 }), { helper: 'up' });
  return performance.now() - t0;
}

test('1000 idle connections never stop status from answering, and each is closed with an error line', async () => {
  const child = spawn(process.execPath, [ATTACKER, s.helperSock, '1000'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', r));

  const latencies: number[] = [];
  let maxOpen = 0;
  const sampler = setInterval(() => (maxOpen = Math.max(maxOpen, s.helper.connectionCount())), 5);
  // Status calls while the flood is being opened...
  while (!out.includes('opened') && latencies.length < 200) {
    latencies.push(await timedStatus(latencies.length));
    await new Promise((r) => setTimeout(r, 10));
  }
  // ...and while all 1000 are open (64 held, the rest evicted).
  for (let i = 0; i < 10; i++) latencies.push(await timedStatus(1000 + i));
  const med = median(latencies);
  console.log(
    `# status under 1000 idle connections: ${latencies.length} calls, median=${med.toFixed(2)} ms, max=${Math.max(...latencies).toFixed(2)} ms`,
  );
  assert.ok(latencies.length >= 10, `only ${latencies.length} status calls`);
  assert.ok(med < 50, `median status latency ${med} ms`);

  assert.equal(await exited, 0);
  clearInterval(sampler);
  console.log(`# most connections open at once on the helper side: ${maxOpen}`);
  // The cap holds: never far above 64 (evicted ones may still be closing for a moment).
  assert.ok(maxOpen <= 2 * 64, `${maxOpen} connections open at once`);
  const summary = JSON.parse(out.trim().split('\n').at(-1)!) as { opened: number; eagainRetries: number; outcomes: Record<string, number> };
  console.log(`# how the idle connections ended: ${JSON.stringify(summary)}`);
  assert.equal(summary.opened, 1000);
  for (const [how, n] of Object.entries(summary.outcomes)) {
    assert.match(how, /^(BUSY|BAD_REQUEST): /, `${n} connections ended as: ${how}`);
  }
  // All but the last 64 were evicted for newer ones rather than left to time out.
  const evicted = Object.entries(summary.outcomes).find(([how]) => how.startsWith('BUSY: too many connections'))?.[1] ?? 0;
  assert.ok(evicted >= 1000 - 64 - 5, `${evicted} evicted`);
  await assertStillAnswers(s);
});

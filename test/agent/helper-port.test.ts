import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { socketHelper } from '../../src/agent/helper-port.js';

// A helper.sock that records each request line and accepts it, or refuses a request holding the
// key `refused()` names as an older helper does (BAD_REQUEST naming the unknown key).
async function fakeHelper(refused: () => string | null = () => null) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-agent-port-'));
  const sock = path.join(dir, 'helper.sock');
  const lines: string[] = [];
  const server = net.createServer((s) => {
    let buf = '';
    s.on('data', (c) => {
      buf += c;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      lines.push(buf.slice(0, nl));
      const req = JSON.parse(buf.slice(0, nl));
      const key = refused();
      if (key !== null && key in req) s.end(JSON.stringify({ id: req.id, ok: false, error: { code: 'BAD_REQUEST', message: `invalid update request: Unrecognized key: "${key}"` } }) + '\n');
      else s.end(JSON.stringify({ id: req.id, ok: true, result: { attemptId: req.attemptId, app: req.app, accepted: true } }) + '\n');
    });
  });
  await new Promise<void>((r) => server.listen(sock, () => r()));
  return {
    sock,
    lines,
    close: () => {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('the update the agent sends to helper.sock carries the control plane attemptId and noWait, and never force, allowDowngrade or allowUnsigned', async () => {
  const fake = await fakeHelper();
  const { sock, lines } = fake;
  try {
    const manifest = { payload: 'e30=', sig: 'AAAA', keyId: '0123456789abcdef' };
    const answer = await socketHelper(sock).update({ app: 'web', version: '2.0.0', attemptId: 'run-9.web', manifest });
    assert.deepEqual(answer, { attemptId: 'run-9.web', app: 'web', accepted: true });
    assert.equal(lines.length, 1);
    const req = JSON.parse(lines[0] as string);
    assert.equal(req.op, 'update');
    assert.equal(req.attemptId, 'run-9.web');
    assert.equal(req.noWait, true);
    assert.deepEqual(req.manifest, manifest);
    for (const k of ['force', 'allowDowngrade', 'allowUnsigned', 'path', 'upload', 'integrity']) assert.equal(k in req, false, `${k} is never sent`);
  } finally {
    fake.close();
  }
});

test("the update carries the entry's notAfter; a helper that does not know the key is asked once more without it", async () => {
  let knowsNotAfter = true;
  const fake = await fakeHelper(() => (knowsNotAfter ? null : 'notAfter'));
  try {
    const manifest = { payload: 'e30=', sig: 'AAAA', keyId: '0123456789abcdef' };
    const e = { app: 'web', version: '2.0.0', attemptId: 'r1-x', manifest, notAfter: 1_800_000_000_000 };
    await socketHelper(fake.sock).update(e);
    assert.equal(JSON.parse(fake.lines[0] as string).notAfter, 1_800_000_000_000);
    knowsNotAfter = false;
    fake.lines.length = 0;
    assert.deepEqual(await socketHelper(fake.sock).update(e), { attemptId: 'r1-x', app: 'web', accepted: true });
    assert.deepEqual(fake.lines.map((l) => 'notAfter' in JSON.parse(l)), [true, false]);
  } finally {
    fake.close();
  }
});

test('the update carries fetchUntil and the mirrors (docs/design.md §18); a helper from before them is asked once more without both, the rest kept', async () => {
  let knows = true;
  const fake = await fakeHelper(() => (knows ? null : 'fetchUntil'));
  try {
    const manifest = { payload: 'e30=', sig: 'AAAA', keyId: '0123456789abcdef' };
    const e = { app: 'web', version: '2.0.0', attemptId: 'r1-y', manifest, watchMs: 60_000, fetchUntil: 1_800_000_000_000 };
    const mirrors = ['https://cp-b.example/', 'https://cp-a.example/'];
    await socketHelper(fake.sock).update(e, undefined, mirrors);
    const first = JSON.parse(fake.lines[0] as string);
    assert.deepEqual([first.fetchUntil, first.mirrors, first.watchMs], [1_800_000_000_000, mirrors, 60_000]);
    knows = false;
    fake.lines.length = 0;
    assert.deepEqual(await socketHelper(fake.sock).update(e, undefined, mirrors), { attemptId: 'r1-y', app: 'web', accepted: true });
    assert.deepEqual(fake.lines.map((l) => ['fetchUntil' in JSON.parse(l), 'mirrors' in JSON.parse(l), 'watchMs' in JSON.parse(l)]), [[true, true, true], [false, false, true]]);
  } finally {
    fake.close();
  }
});

test("the update carries the entry's watchMs (the run's bake); a helper from before watch windows is asked once more without it, notAfter kept", async () => {
  let knowsWatch = true;
  const fake = await fakeHelper(() => (knowsWatch ? null : 'watchMs'));
  try {
    const manifest = { payload: 'e30=', sig: 'AAAA', keyId: '0123456789abcdef' };
    const e = { app: 'web', version: '2.0.0', attemptId: 'r1-x', manifest, notAfter: 1_800_000_000_000, watchMs: 60_000 };
    await socketHelper(fake.sock).update(e);
    assert.deepEqual([JSON.parse(fake.lines[0] as string).watchMs, JSON.parse(fake.lines[0] as string).notAfter], [60_000, 1_800_000_000_000]);
    knowsWatch = false;
    fake.lines.length = 0;
    assert.deepEqual(await socketHelper(fake.sock).update(e), { attemptId: 'r1-x', app: 'web', accepted: true });
    assert.deepEqual(fake.lines.map((l) => ['watchMs' in JSON.parse(l), 'notAfter' in JSON.parse(l)]), [[true, true], [false, true]]);
  } finally {
    fake.close();
  }
});

test("the update carries the entry's downgrade authorization; a helper from before them is asked once more without it, the rest kept", async () => {
  let knowsDowngrade = true;
  const fake = await fakeHelper(() => (knowsDowngrade ? null : 'downgrade'));
  try {
    const manifest = { payload: 'e30=', sig: 'AAAA', keyId: '0123456789abcdef' };
    const downgrade = { payload: 'e30=', sig: 'BBBB', keyId: 'fedcba9876543210' };
    const e = { app: 'web', version: '1.1.0', attemptId: 'r2-x', manifest, notAfter: 1_800_000_000_000, watchMs: 60_000, downgrade };
    await socketHelper(fake.sock).update(e);
    assert.deepEqual(JSON.parse(fake.lines[0] as string).downgrade, downgrade);
    knowsDowngrade = false;
    fake.lines.length = 0;
    assert.deepEqual(await socketHelper(fake.sock).update(e), { attemptId: 'r2-x', app: 'web', accepted: true });
    assert.deepEqual(fake.lines.map((l) => ['downgrade' in JSON.parse(l), 'watchMs' in JSON.parse(l), 'notAfter' in JSON.parse(l)]), [[true, true, true], [false, true, true]]);
  } finally {
    fake.close();
  }
});

test("the update carries the entry's directive (docs/design.md §21); a helper from before TUF is asked once more without it, the rest kept", async () => {
  let knows = true;
  const fake = await fakeHelper(() => (knows ? null : 'directive'));
  try {
    const manifest = { payload: 'e30=', sig: 'AAAA', keyId: '0123456789abcdef' };
    const directive = { payload: 'e30=', sig: 'BBBB', keyId: 'fedcba9876543210' };
    const e = { app: 'web', version: '2.0.0', attemptId: 'r1-d', manifest, directive, watchMs: 60_000 };
    await socketHelper(fake.sock).update(e);
    assert.deepEqual(JSON.parse(fake.lines[0] as string).directive, directive);
    knows = false;
    fake.lines.length = 0;
    assert.deepEqual(await socketHelper(fake.sock).update(e), { attemptId: 'r1-d', app: 'web', accepted: true });
    assert.deepEqual(fake.lines.map((l) => { const r = JSON.parse(l); return ['directive' in r, r.watchMs]; }), [[true, 60_000], [false, 60_000]]);
  } finally {
    fake.close();
  }
});

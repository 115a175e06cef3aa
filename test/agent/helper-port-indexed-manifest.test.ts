import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { socketHelper } from '../../src/agent/helper-port.js';
import { StewardError } from '../../src/core/errors.js';
import { mustParse } from '../../src/core/must-parse.js';
import * as z from '../../src/core/zod-mini.js';
import { updateRequestSchema } from '../../src/protocol/schemas.js';

// docs/design.md §20.2: the agent hands a desired entry's indexedManifest to the helper in the update
// request. A helper from before it refuses the request as malformed (BAD_REQUEST, no receipt): the
// agent asks once more without the key, and sends it to that helper no more, until a helper
// that started since (another pid and start time in `status`) is offered it again. No other
// refusal makes it ask again.

const { indexedManifest: _left, ...olderShape } = updateRequestSchema.def.shape;
// The update schema of a helper from before indexed manifests: today's, strict, without the key.
const olderUpdate = z.strictObject(olderShape);

interface Fake {
  sock: string;
  updates: Array<Record<string, unknown>>;
  helper: { old: boolean; pid: number; startedAt: number; refuseWith: StewardError | null };
  close(): void;
}

// A helper.sock answering `status` with the fake's pid and start time, and `update` as a helper
// of today does (accepted) or, when `old`, as one from before indexed manifests does: its
// strict schema's own refusal of the unknown key. `refuseWith` refuses every update so.
async function fakeHelper(): Promise<Fake> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-agent-indexed-'));
  const sock = path.join(dir, 'helper.sock');
  const updates: Array<Record<string, unknown>> = [];
  const helper = { old: false, pid: 100, startedAt: 1_000, refuseWith: null as StewardError | null };
  const server = net.createServer((s) => {
    let buf = '';
    s.on('data', (c) => {
      buf += c;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      const req = JSON.parse(buf.slice(0, nl));
      const answer = (result: unknown) => s.end(JSON.stringify({ id: req.id, ok: true, result }) + '\n');
      const refuse = (e: StewardError) => s.end(JSON.stringify({ id: req.id, ok: false, error: { code: e.code, message: e.message } }) + '\n');
      if (req.op === 'status') return answer({ root: '/', pid: helper.pid, startedAt: helper.startedAt, recovering: false, apps: [] });
      updates.push(req);
      if (helper.refuseWith) return refuse(helper.refuseWith);
      try {
        mustParse(helper.old ? olderUpdate : updateRequestSchema, req, 'BAD_REQUEST', 'invalid request');
      } catch (err) {
        return refuse(err as StewardError);
      }
      answer({ attemptId: req.attemptId, app: req.app, accepted: true });
    });
  });
  await new Promise<void>((r) => server.listen(sock, () => r()));
  return {
    sock,
    updates,
    helper,
    close: () => {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const manifest = { payload: 'e30=', sig: 'AAAA', keyId: '0123456789abcdef' };
const indexedManifest = { payload: 'e30=', sig: 'BBBB', keyId: '0123456789abcdef' };
const entry = (n: number) => ({ app: 'web', version: '2.0.0', attemptId: `r${n}-x`, manifest, indexedManifest, fetchUntil: 1_800_000_000_000 });
const sent = (f: Fake) => f.updates.map((u) => 'indexedManifest' in u);

test('a helper of today gets the indexed manifest beside the manifest in the update request', async () => {
  const f = await fakeHelper();
  try {
    const port = socketHelper(f.sock);
    await port.status();
    assert.deepEqual(await port.update(entry(1)), { attemptId: 'r1-x', app: 'web', accepted: true });
    assert.deepEqual(f.updates.map((u) => [u.indexedManifest, u.manifest]), [[indexedManifest, manifest]]);
  } finally {
    f.close();
  }
});

test('a helper from before indexed manifests refuses the key as malformed: the agent asks once more without it, and sends it to that helper no more', async () => {
  const f = await fakeHelper();
  f.helper.old = true;
  try {
    const port = socketHelper(f.sock);
    await port.status();
    assert.deepEqual(await port.update(entry(1)), { attemptId: 'r1-x', app: 'web', accepted: true });
    assert.deepEqual(sent(f), [true, false], 'one refusal, one retry without the key');
    assert.equal(f.updates[1]?.fetchUntil, 1_800_000_000_000, 'the rest of the request is kept');
    assert.deepEqual(f.updates[1]?.manifest, manifest);
    f.updates.length = 0;
    await port.status();
    await port.update(entry(2));
    await port.update(entry(3));
    assert.deepEqual(sent(f), [false, false], 'remembered for this helper');
  } finally {
    f.close();
  }
});

test('a helper that started since (another pid or start time) is offered the indexed manifest again, once', async () => {
  const f = await fakeHelper();
  f.helper.old = true;
  try {
    const port = socketHelper(f.sock);
    // The refusal comes before any status: it belongs to the helper the first status sees.
    await port.update(entry(1));
    await port.status();
    f.updates.length = 0;
    await port.update(entry(2));
    assert.deepEqual(sent(f), [false]);
    // The helper was updated (a new process of today's helper): offered, and taken.
    Object.assign(f.helper, { old: false, pid: 200, startedAt: 2_000 });
    await port.status();
    f.updates.length = 0;
    await port.update(entry(3));
    assert.deepEqual(sent(f), [true]);
    // And back to an old one (a rollback of steward): refused once, retried, remembered.
    Object.assign(f.helper, { old: true, pid: 300, startedAt: 3_000 });
    await port.status();
    f.updates.length = 0;
    await port.update(entry(4));
    await port.update(entry(5));
    assert.deepEqual(sent(f), [true, false, false]);
  } finally {
    f.close();
  }
});

test('no other refusal makes the agent ask again: a BAD_REQUEST about something else, or about the key\'s content, is thrown after one request', async () => {
  const f = await fakeHelper();
  try {
    const port = socketHelper(f.sock);
    await port.status();
    for (const message of ['invalid request: version: not a version', 'invalid request: indexedManifest.sig: Invalid input', 'invalid request: (top level): Unrecognized key: "somethingElse" (somethingElse)']) {
      f.helper.refuseWith = new StewardError('BAD_REQUEST', message);
      f.updates.length = 0;
      await assert.rejects(port.update(entry(1)), (err: unknown) => err instanceof StewardError && err.code === 'BAD_REQUEST' && err.message === message);
      assert.deepEqual(sent(f), [true], message);
    }
    // A refusal that is not BAD_REQUEST (the helper checked the indexed manifest: a receipt) is final.
    f.helper.refuseWith = new StewardError('SIGNATURE_INVALID', 'the indexed manifest of web 2.0.0: signature does not verify');
    f.updates.length = 0;
    await assert.rejects(port.update(entry(2)), (err: unknown) => err instanceof StewardError && err.code === 'SIGNATURE_INVALID');
    assert.deepEqual(sent(f), [true]);
    // And none of these made the agent stop sending the key.
    f.helper.refuseWith = null;
    f.updates.length = 0;
    await port.update(entry(3));
    assert.deepEqual(sent(f), [true]);
  } finally {
    f.close();
  }
});

test('a helper that refuses the key every time is asked exactly twice, never in a loop', async () => {
  const f = await fakeHelper();
  try {
    const port = socketHelper(f.sock);
    f.helper.refuseWith = new StewardError('BAD_REQUEST', 'invalid request: (top level): Unrecognized key: "indexedManifest" (indexedManifest)');
    await assert.rejects(port.update(entry(1)), (err: unknown) => err instanceof StewardError && err.code === 'BAD_REQUEST');
    assert.deepEqual(sent(f), [true, false]);
  } finally {
    f.close();
  }
});

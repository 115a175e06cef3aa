// A control plane killed (SIGKILL of a real `steward-control serve`) with events queued, some of them
// in flight to a receiver that hangs, then started again: every event arrives at least once, each
// post signed and carrying its event's id, on both stores (docs/design.md §19). The killed
// instance's leases run out (--hook-timeout 1: a lease of 7 s) and the new one takes them over.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { emitEvent } from '../../src/control/hooks/emit-event.js';
import { verifySignature } from '../../src/control/hooks/sign-event.js';
import { openStore } from '../../src/control/store/open-store.js';
import { startHookReceiver } from '../helpers/hook-receiver.js';
import { startServeProcess } from '../helpers/serve-process.js';
import { describeEachBackend } from '../helpers/store-backends.js';

const SECRET = 'the-receiver-and-steward-share-this';

describeEachBackend((backend) => {
  test('events queued and in flight when serve is SIGKILLed all arrive, signed and with their ids, once it is started again', { timeout: 90_000 }, async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-hook-kill-'));
    const receiver = await startHookReceiver({ mode: { kind: 'hang' } });
    const db = await backend.createDatabase();
    const args = ['--hook-timeout', '1'];
    const killAll: Array<() => void> = [];
    const env = { ...process.env, DEBUG: 'steward:control:hooks', STEWARD_CONTROL_ARTIFACTS: path.join(dir, 'artifacts') };
    try {
      const store = await openStore(db);
      let ids: string[];
      try {
        await store.write((tx) => tx.hooks.insert({ name: 'pager', url: receiver.url, events: ['run.halted', 'target.behind'], secret: SECRET, createdAt: Date.now(), createdBy: null }));
        ids = await store.write(async (tx) => {
          const out: string[] = [];
          for (let i = 1; i <= 6; i++) out.push((await emitEvent(tx, i % 2 ? 'run.halted' : 'target.behind', `run/${i}`, { i }))!);
          return out;
        });
      } finally {
        await store.close();
      }
      const first = await startServeProcess(db, args, { env });
      killAll.push(() => first.child.kill('SIGKILL'));
      // Four posts in flight (a hook's most at once), hanging; two still queued.
      await receiver.waitFor(4);
      first.child.kill('SIGKILL');
      await new Promise((resolve) => first.child.once('exit', resolve));
      assert.equal(first.child.signalCode, 'SIGKILL');

      receiver.mode = { kind: 'ok' };
      const second = await startServeProcess(db, args, { env });
      killAll.push(() => second.child.kill('SIGKILL'));
      try {
        // Delivered, every one: the new instance took the two never posted at once, and the four
        // the killed one held once their leases ran out.
        const check = await openStore(db);
        try {
          const deadline = Date.now() + 60_000;
          const states = async () => (await check.read((tx) => tx.hooks.deliveries('pager', 100))).map((r) => r.state);
          while (Date.now() < deadline && (await states()).some((st) => st !== 'delivered')) await new Promise((resolve) => setTimeout(resolve, 200));
          assert.deepEqual(await states(), Array(6).fill('delivered'), `serve's log: ${second.log()}`);
        } finally {
          await check.close();
        }
        for (const r of receiver.received) {
          assert.ok(verifySignature(SECRET, r.body, String(r.headers['steward-signature']), Date.now(), 600), 'a valid signature');
          assert.equal(r.headers['idempotency-key'], JSON.parse(r.body).id);
        }
        // The four killed mid-post (the oldest) came again with the same id: at least once, and a
        // receiver dedupes by the id.
        const posts = (id: string) => receiver.received.filter((r) => JSON.parse(r.body).id === id).length;
        assert.deepEqual(ids.map(posts).map((n, k) => (k < 4 ? n >= 2 : n >= 1)), Array(6).fill(true), ids.map(posts).join(','));
      } finally {
        await second.stop();
      }
    } finally {
      for (const k of killAll) k();
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// What Ctrl-C during `agentctl update` says in each case besides the one the e2e test drives
// (test/e2e/update-interrupted.test.ts: admin.sock, past staging, held): said from the helper's
// status answer, which a plain object stands in for here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CliContext } from '../../src/cli/context.js';
import { interruptNotice } from '../../src/cli/interrupted-update.js';

function ctxWith(kind: 'admin' | 'helper', app: Record<string, unknown> | null | 'no answer'): CliContext {
  return {
    paths: {} as CliContext['paths'],
    json: false,
    socket: { path: `/run/steward/${kind}.sock`, kind },
    helper: {
      status: () => (app === 'no answer' ? new Promise(() => {}) : Promise.resolve({ apps: app ? [{ name: 'web', hold: null, running: null, ...app }] : [] })),
    } as unknown as CliContext['helper'],
  };
}

const update = { app: 'web', version: '2.0.0' };
const running = { op: 'update', attemptId: 'a-1', phase: 'fetch', startedAt: 0 };

test('interrupted while a --file is still being uploaded, the update is said to stop there with nothing changed', async () => {
  const lines = await interruptNotice(ctxWith('helper', { running }), {}, update, { attemptId: 'a-1', uploadSent: false });
  assert.match(lines.join('\n'), /still being sent to the helper: the update of web to 2\.0\.0 stops there, and the helper changes nothing/);
  assert.doesNotMatch(lines.join('\n'), /goes on/);
});

test('over admin.sock during staging, the update goes on and will hold the app once staged', async () => {
  const text = (await interruptNotice(ctxWith('admin', { running }), { root: '/r' }, update, { attemptId: 'a-1', uploadSent: true })).join('\n');
  assert.match(text, /goes on in steward-helper \(attempt a-1, now at fetch\)/);
  assert.match(text, /`agentctl --root \/r status web`.*`agentctl --root \/r receipts web`/);
  assert.match(text, /once its release is staged, this update holds web/);
});

test('over helper.sock the update goes on and no hold is claimed', async () => {
  const text = (await interruptNotice(ctxWith('helper', { running }), { socket: '/run/steward/helper.sock' }, update, { attemptId: 'a-1', uploadSent: true })).join('\n');
  assert.match(text, /goes on in steward-helper/);
  assert.match(text, /`agentctl --socket \/run\/steward\/helper\.sock status web`/);
  assert.match(text, /over helper\.sock an update puts no hold on web/);
  assert.doesNotMatch(text, /is held|holds web/);
});

test('when the attempt already ended, it is not said to go on', async () => {
  const text = (await interruptNotice(ctxWith('admin', { running: null }), {}, update, { attemptId: 'a-1', uploadSent: true })).join('\n');
  assert.match(text, /no update of web is running now: it ended before the interrupt \(attempt a-1\)/);
  assert.match(text, /`agentctl receipts web`/);
});

test('a helper that does not answer status in time: the notice says so and still says how to follow', { timeout: 10_000 }, async () => {
  const text = (await interruptNotice(ctxWith('admin', 'no answer'), {}, update, { attemptId: null, uploadSent: true })).join('\n');
  assert.match(text, /goes on in steward-helper if it reached it.*did not answer status within 2000 ms/);
  assert.match(text, /`agentctl status web`/);
});

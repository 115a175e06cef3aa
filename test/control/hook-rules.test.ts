// The pure rules of hooks (docs/design.md §19): the retry delays (doubling from 2 s, capped at 5 min,
// half of each random), the event list `--events` takes, the URLs a hook may post to, and the
// signature a receiver checks (the time is signed: an old delivery replayed is refused).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { retryDelayMs } from '../../src/control/hooks/retry-delay.js';
import { HOOK_EVENTS, parseHookEvents } from '../../src/control/hooks/hook-events.js';
import { checkHookUrl } from '../../src/control/hooks/hook-url.js';
import { signatureHeader, verifySignature } from '../../src/control/hooks/sign-event.js';

test('retry delays double from 2 s to a 5 min cap, each between half and all of its step', () => {
  const table: Array<[attempts: number, random: number, ms: number]> = [
    [1, 0, 1_000], [1, 0.999999, 2_000], [1, 0.5, 1_500],
    [2, 0, 2_000], [3, 0, 4_000], [4, 1, 16_000], [8, 0, 128_000],
    [9, 0, 150_000], [9, 1, 300_000], [50, 0.5, 225_000], [1e9, 1, 300_000],
    [0, 0, 1_000], [1, -3, 1_000], [1, 7, 2_000],
  ];
  for (const [attempts, random, ms] of table) assert.equal(retryDelayMs(attempts, random), ms, `attempts=${attempts} random=${random}`);
});

test('--events takes known events, each once, in order; * is all of them; anything else is refused naming the known ones', () => {
  assert.deepEqual(parseHookEvents(' run.halted,target.behind , run.halted'), ['run.halted', 'target.behind']);
  assert.deepEqual(parseHookEvents('*'), [...HOOK_EVENTS]);
  for (const bad of ['', ' , ', 'run.halted,RUN.PAUSED', 'run.*', 'hook.test', 'run.halted,*']) {
    assert.throws(() => parseHookEvents(bad), (err: Error & { code?: string }) => err.code === 'USAGE' && /run\.started/.test(err.message), JSON.stringify(bad));
  }
});

test('a hook posts over https anywhere, over http only to loopback, never with a user, password or fragment', () => {
  for (const ok of ['https://hooks.example.com/steward', 'https://10.0.0.5:8443/x?y=1', 'http://127.0.0.1:9000/h', 'http://[::1]:9000/h', 'http://localhost/h']) assert.equal(checkHookUrl(ok).href, new URL(ok).href);
  for (const bad of ['http://hooks.example.com/', 'http://10.0.0.5/', 'file:///etc/passwd', 'gopher://127.0.0.1/', 'https://u:p@hooks.example.com/', 'https://hooks.example.com/#x', 'hooks.example.com', `https://h.example/${'a'.repeat(2100)}`]) {
    assert.throws(() => checkHookUrl(bad), (err: Error & { code?: string }) => err.code === 'USAGE', bad);
  }
});

test('a signature is valid for its body, secret and a recent time only', () => {
  const body = '{"id":"x"}';
  const at = 1_800_000_000_000;
  const h = signatureHeader('secret-secret-secret', body, at);
  assert.match(h, /^t=1800000000,v1=[0-9a-f]{64}$/);
  assert.equal(verifySignature('secret-secret-secret', body, h, at + 60_000), true);
  assert.equal(verifySignature('secret-secret-secret', body + ' ', h, at), false, 'another body');
  assert.equal(verifySignature('another-secret-secret', body, h, at), false, 'another secret');
  assert.equal(verifySignature('secret-secret-secret', body, h, at + 301_000), false, 'replayed after five minutes');
  assert.equal(verifySignature('secret-secret-secret', body, h.replace(/t=\d+/, 't=1800000100'), at), false, 'a time changed');
  assert.equal(verifySignature('secret-secret-secret', body, 'garbage', at), false);
});

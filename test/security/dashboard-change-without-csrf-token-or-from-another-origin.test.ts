import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { rolloutStart } from '../../src/control/operations/rollout-ops.js';
import { launchBrowser, logIn, openPage } from '../helpers/browser.js';
import { startDashboardFleet, type DashboardFleet } from '../helpers/dashboard-fleet.js';

interface Answer {
  status: number;
  body: any;
  cookie: string | null;
}

function send(url: string, method: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }) } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null, cookie: res.headers['set-cookie']?.[0]?.split(';')[0] ?? null }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

// A running rollout of web that a pause would change.
async function runningFleet(t: { after(fn: () => Promise<void>): void }): Promise<DashboardFleet> {
  const fleet = await startDashboardFleet();
  t.after(() => fleet.close());
  await fleet.run(rolloutStart, { app: 'web', version: '2.0.0', select: 'env=prod', bake: '10m' });
  return fleet;
}

test('a change with the session cookie but without its anti-CSRF token, with a wrong one, or from another Origin is refused and changes nothing', async (t) => {
  const fleet = await runningFleet(t);
  const url = fleet.adminUrl;
  const login = await send(`${url}/ui/login`, 'POST', {}, JSON.stringify({ token: fleet.operatorToken }));
  assert.equal(login.status, 200);
  const cookie = login.cookie as string;
  const csrf = login.body.csrfToken as string;
  const pause = (headers: Record<string, string>) => send(`${url}/ui/api/rollout/pause`, 'POST', { cookie, ...headers }, JSON.stringify({ app: 'web' }));

  for (const [why, headers] of [
    ['no token', {}],
    ['a wrong token', { 'x-csrf-token': csrf.slice(0, -2) + (csrf.endsWith('AA') ? 'BB' : 'AA') }],
    ['another Origin', { 'x-csrf-token': csrf, origin: 'http://evil.example' }],
    ['a loopback Origin on another port', { 'x-csrf-token': csrf, origin: url.replace(/:\d+$/, ':1') }],
  ] as const) {
    const a = await pause(headers);
    assert.equal(a.status, 403, `${why}: ${JSON.stringify(a.body)}`);
    assert.equal(a.body.error.code, 'FORBIDDEN');
    assert.equal((await fleet.status('web')).status, 'running', `${why}: nothing paused`);
  }
  const ok = await pause({ 'x-csrf-token': csrf, origin: url });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.equal((await fleet.status('web')).status, 'paused');
});

test('a page on another origin that posts to the dashboard with the logged-in browser cookie changes nothing', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const fleet = await runningFleet(t);
  const p = await openPage(browser);
  await logIn(p, fleet.adminUrl, fleet.operatorToken);
  // Another site on the same host (so the cookie, SameSite=Strict, is sent: same site, other
  // origin), whose page posts a pause the way a form or a script of an attacker would.
  const attack = `<!doctype html><form id=f method=post action="${fleet.adminUrl}/ui/api/rollout/pause" enctype="text/plain"><input name='{"app":"web","x":"' value='"}'></form>
<script>fetch(${JSON.stringify(fleet.adminUrl + '/ui/api/rollout/pause')}, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: '{"app":"web"}' }).finally(() => document.getElementById('f').submit());</script>`;
  const evil = http.createServer((_req, res) => res.end(attack));
  await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => evil.close(() => resolve())));
  const answers: number[] = [];
  p.page.on('response', (r) => {
    if (r.url().endsWith('/ui/api/rollout/pause')) answers.push(r.status());
  });
  await p.page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
  await p.page.waitForURL(`${fleet.adminUrl}/ui/api/rollout/pause`);
  assert.deepEqual(answers, [403, 403], 'the fetch and the form were both refused');
  assert.equal((await fleet.status('web')).status, 'running');
});

// `release add` of a release whose steward-release.json names a metrics URL off loopback, or a
// selector that does not parse (docs/design.md §19): refused RELEASE_INVALID (exit 3) with the
// rule in the message, nothing added to the catalog; a loopback one is added. The host refuses
// the same release again (test/e2e/app-signals.test.ts).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO } from '../helpers/host.js';
import { FakeClock, startControlInProcess, type Control } from '../helpers/control-harness.js';
import { appRelease } from '../fixtures/app-releases.js';

const BIN = path.join(REPO, 'bin', 'steward-control.js');
let c: Control;
let key = '';

function cli(...args: string[]): Promise<{ code: number; json: any; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--db', c.dbFile, ...args], { env: { ...process.env, DEBUG: '' } }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      let json: unknown = null;
      try {
        json = JSON.parse(stdout);
      } catch {
        // human output
      }
      resolve({ code: typeof code === 'number' ? code : 1, json, stdout, stderr });
    });
  });
}

function release(version: string, metrics: { url: string; requests: string; errors: string }): string {
  const f = path.join(c.dir, `web-${version}.tgz`);
  writeFileSync(f, appRelease('web', version, 9100, { metrics }));
  return f;
}

before(async () => {
  c = await startControlInProcess({ clock: new FakeClock(Date.now()) });
  key = (await cli('keys', 'create', '--out', path.join(c.dir, 'k'), '--json')).json.privateKeyFile;
});
after(() => c.close());

test('a metrics URL off loopback is refused at release add, RELEASE_INVALID, and the catalog stays without it', async () => {
  const urls = ['http://10.0.0.7:9100/metrics', 'http://metrics.example.com:9100/metrics', 'http://127.0.0.1/metrics', 'https://127.0.0.1:9100/metrics', 'http://169.254.169.254:80/latest'];
  for (const [i, url] of urls.entries()) {
    const r = await cli('release', 'add', 'web', `1.0.${i}`, '--file', release(`1.0.${i}`, { url, requests: 'a_total', errors: 'a_total{code=~"5.."}' }), '--base-url', c.server.url, '--key', key, '--json');
    assert.deepEqual([r.code, r.json?.error?.code], [3, 'RELEASE_INVALID'], `${url}: ${r.stdout}${r.stderr}`);
    assert.match(r.json.error.message, /metrics\.url must be http:\/\/127\.0\.0\.1, http:\/\/\[::1\] or http:\/\/localhost with a port and a path/);
  }
  const list = await cli('release', 'list', 'web', '--json');
  assert.equal(JSON.stringify(list.json).includes('1.0.'), false, list.stdout);
});

test('a selector that does not parse is refused; a loopback metrics block is added', async () => {
  const bad = await cli('release', 'add', 'web', '2.0.0', '--file', release('2.0.0', { url: 'http://127.0.0.1:9100/metrics', requests: 'a_total{code=~"(a+)+"}', errors: 'b' }), '--base-url', c.server.url, '--key', key, '--json');
  assert.deepEqual([bad.code, bad.json?.error?.code], [3, 'RELEASE_INVALID'], bad.stdout + bad.stderr);
  assert.match(bad.json.error.message, /metrics\.requests/);
  const good = await cli('release', 'add', 'web', '2.0.1', '--file', release('2.0.1', { url: 'http://[::1]:9100/metrics', requests: 'a_total', errors: 'a_total{code=~"5.."}' }), '--base-url', c.server.url, '--key', key, '--json');
  assert.deepEqual([good.code, good.json?.change], [0, 'added'], good.stdout + good.stderr);
});

import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes, X509Certificate } from 'node:crypto';
import { chmodSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { CONTROL_BIN, startServeProcess, type ServeProcess } from '../helpers/serve-process.js';
import { skipUnlessCI } from '../helpers/skip.js';
import { hasOpenssl, selfSignedCert, tlsConnect as connect } from '../helpers/tls-cert.js';

// `serve` re-reads its TLS files on SIGHUP (`systemctl reload steward-control`): a renewed
// certificate and rotated ticket keys are in use on both https listeners for the connections
// after it, with no restart; files that are refused (a key that is not the certificate's, a
// missing file) change nothing, and the log says why. SIGHUP never stops serve.

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-tls-reload-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function initDb(dir: string): string {
  const db = path.join(dir, 'control.db');
  execFileSync(process.execPath, [CONTROL_BIN, '--db', db, 'init'], { stdio: 'ignore' });
  return db;
}

const ENV = { ...process.env, DEBUG: 'steward:control:*' };

async function serve(t: TestContext, db: string, flags: string[]): Promise<ServeProcess> {
  const s = await startServeProcess(db, flags, { env: ENV });
  t.after(() => s.stop());
  return s;
}

const portOf = (url: string | undefined) => Number(new URL(url as string).port);

// SIGHUP, then the log line that answers it (the lines before it are not looked at again).
async function hup(s: ServeProcess, expect: RegExp): Promise<string> {
  const before = s.log().length;
  s.child.kill('SIGHUP');
  const deadline = Date.now() + 10_000;
  for (;;) {
    const seen = s.log().slice(Math.min(before, s.log().length));
    const line = seen.split('\n').find((l) => expect.test(l));
    if (line) return line;
    if (s.child.exitCode !== null || s.child.signalCode !== null) assert.fail(`serve ended on SIGHUP: ${s.log()}`);
    if (Date.now() > deadline) assert.fail(`no log line ${expect} after SIGHUP: ${seen}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const fingerprint = (pem: Buffer) => new X509Certificate(pem).fingerprint256;

test('SIGHUP puts a renewed certificate and new ticket keys in use on both listeners; a refused pair changes nothing', { timeout: 60_000 }, async (t) => {
  if (!hasOpenssl()) return skipUnlessCI(t, 'openssl is not installed: cannot make a certificate');
  const dir = tempDir(t);
  const a = selfSignedCert(dir, 'a');
  const b = selfSignedCert(dir, 'b');
  const ca = [a.cert, b.cert];
  const certFile = path.join(dir, 'tls.pem');
  const keyFile = path.join(dir, 'tls.key');
  const ticketFile = path.join(dir, 'ticket.keys');
  const install = (c: { certFile: string }, k: { keyFile: string }) => {
    copyFileSync(c.certFile, certFile);
    copyFileSync(k.keyFile, keyFile);
  };
  install(a, a);
  writeFileSync(ticketFile, randomBytes(48), { mode: 0o600 });
  const s = await serve(t, initDb(dir), ['--tls-cert', certFile, '--tls-key', keyFile, '--tls-ticket-keys', ticketFile, '--admin-listen', '127.0.0.1:0']);
  const ports = [portOf(s.urls.listening), portOf(s.urls.admin)];

  const before = await connect(ports[0]!, ca);
  assert.equal(before.cert, fingerprint(a.cert), 'the fleet listener shows certificate a');
  assert.equal((await connect(ports[1]!, ca)).cert, fingerprint(a.cert), 'the admin listener shows certificate a');
  assert.equal((await connect(ports[0]!, ca, before.session)).reused, true, 'a session resumes before the reload');

  install(b, b);
  writeFileSync(ticketFile, randomBytes(48));
  const line = await hup(s, /SIGHUP: TLS (reloaded|not reloaded)/);
  assert.match(line, /TLS reloaded: certificate .*tls\.pem .*valid until .*ticket keys .*ticket\.keys/);
  assert.ok(line.includes(fingerprint(b.cert)), `the log names the new certificate: ${line}`);
  for (const port of ports) assert.equal((await connect(port, ca)).cert, fingerprint(b.cert), `port ${port} shows certificate b after SIGHUP`);
  assert.equal((await connect(ports[0]!, ca, before.session)).reused, false, 'a ticket sealed with the old keys no longer resumes');
  const after = await connect(ports[0]!, ca);
  assert.equal((await connect(ports[0]!, ca, after.session)).reused, true, 'a session of the new keys resumes');

  // A key that is not the certificate's: refused whole, the listeners keep b and the keys.
  install(a, b);
  assert.match(await hup(s, /SIGHUP: TLS (reloaded|not reloaded)/), /TLS not reloaded, the listeners keep the certificate they have: .*tls\.pem and key .*tls\.key cannot be used together/);
  for (const port of ports) assert.equal((await connect(port, ca)).cert, fingerprint(b.cert), `port ${port} still shows certificate b`);
  assert.equal((await connect(ports[0]!, ca, after.session)).reused, true, 'the ticket keys did not change either');

  // Ticket keys that are refused (others may read them) keep the certificate from changing too.
  install(a, a);
  writeFileSync(ticketFile, randomBytes(48));
  chmodSync(ticketFile, 0o644);
  assert.match(await hup(s, /SIGHUP: TLS (reloaded|not reloaded)/), /TLS not reloaded.*open to others/);
  assert.equal((await connect(ports[0]!, ca)).cert, fingerprint(b.cert), 'still certificate b');

  rmSync(certFile);
  assert.match(await hup(s, /SIGHUP: TLS (reloaded|not reloaded)/), /TLS not reloaded.*cannot read the TLS certificate/);
  assert.equal((await connect(ports[1]!, ca)).cert, fingerprint(b.cert), 'still certificate b on the admin listener');
});

test('without --tls-ticket-keys, SIGHUP keeps the process\'s own ticket keys: sessions resume across a renewal', { timeout: 60_000 }, async (t) => {
  if (!hasOpenssl()) return skipUnlessCI(t, 'openssl is not installed: cannot make a certificate');
  const dir = tempDir(t);
  const a = selfSignedCert(dir, 'a');
  const b = selfSignedCert(dir, 'b');
  const certFile = path.join(dir, 'tls.pem');
  const keyFile = path.join(dir, 'tls.key');
  copyFileSync(a.certFile, certFile);
  copyFileSync(a.keyFile, keyFile);
  const s = await serve(t, initDb(dir), ['--tls-cert', certFile, '--tls-key', keyFile]);
  const port = portOf(s.urls.listening);
  const first = await connect(port, [a.cert, b.cert]);
  copyFileSync(b.certFile, certFile);
  copyFileSync(b.keyFile, keyFile);
  const line = await hup(s, /SIGHUP: TLS (reloaded|not reloaded)/);
  assert.match(line, /TLS reloaded/);
  assert.doesNotMatch(line, /ticket keys/);
  assert.equal((await connect(port, [a.cert, b.cert])).cert, fingerprint(b.cert), 'a new connection shows certificate b');
  assert.equal((await connect(port, [a.cert, b.cert], first.session)).reused, true, 'a session from before the reload resumes');
});

test('SIGHUP on plain http is logged and serve goes on answering', { timeout: 30_000 }, async (t) => {
  const dir = tempDir(t);
  const s = await serve(t, initDb(dir), []);
  assert.match(await hup(s, /SIGHUP/), /plain http, no TLS files to read again/);
  const status = await new Promise<number>((resolve, reject) => {
    http.get(`${s.urls.listening}/v1/no-such-path`, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
  assert.equal(status, 404, 'serve still answers after SIGHUP');
});

test('serve refuses a certificate and a key that are not a pair before it listens (USAGE)', (t) => {
  if (!hasOpenssl()) return skipUnlessCI(t, 'openssl is not installed: cannot make a certificate');
  const dir = tempDir(t);
  const a = selfSignedCert(dir, 'a');
  const b = selfSignedCert(dir, 'b');
  const r = spawnSync(process.execPath, [CONTROL_BIN, '--db', initDb(dir), '--json', 'serve', '--listen', '127.0.0.1:0', '--tls-cert', a.certFile, '--tls-key', b.keyFile], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 2, r.stderr + r.stdout);
  const error = (JSON.parse(r.stdout) as { error: { code: string; message: string } }).error;
  assert.equal(error.code, 'USAGE');
  assert.match(error.message, /a\.pem and key .*b\.key cannot be used together: .*mismatch/);
});

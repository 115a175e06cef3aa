import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { readTicketKeys } from '../../src/control/cli/commands/serve-run.js';
import { StewardError } from '../../src/core/errors.js';
import { CONTROL_BIN, startServeProcess } from '../helpers/serve-process.js';
import { skipUnlessCI } from '../helpers/skip.js';
import { hasOpenssl, selfSignedCert, tlsConnect as connect } from '../helpers/tls-cert.js';

// `serve --tls-ticket-keys FILE`: instances that share the file resume each other's TLS sessions
// (an agent behind a load balancer reaches any of them), instances without it do not; the file
// is a secret, refused when others can read it (or group write it), and must hold 48 bytes.

const BIN = CONTROL_BIN;

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-ticket-keys-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const codeOf = (fn: () => unknown): string => {
  try {
    fn();
    return 'none';
  } catch (err) {
    return err instanceof StewardError ? err.code : String(err);
  }
};

test('the keys file: 48 raw bytes or their base64, a regular file others cannot read and group cannot write', (t) => {
  const dir = tempDir(t);
  const keys = randomBytes(48);
  const at = (name: string, bytes: Buffer | string, mode = 0o600) => {
    const f = path.join(dir, name);
    writeFileSync(f, bytes);
    chmodSync(f, mode);
    return f;
  };
  assert.deepEqual(readTicketKeys(at('raw', keys)), keys);
  assert.deepEqual(readTicketKeys(at('b64', `${keys.toString('base64')}\n`)), keys);
  assert.equal(codeOf(() => readTicketKeys(at('short', keys.subarray(0, 47)))), 'USAGE');
  assert.equal(codeOf(() => readTicketKeys(at('long-b64', randomBytes(64).toString('base64')))), 'USAGE');
  assert.equal(codeOf(() => readTicketKeys(at('text', 'not base64 at all, and not 48 bytes either'))), 'USAGE');
  assert.equal(codeOf(() => readTicketKeys(at('open', keys, 0o644))), 'FORBIDDEN');
  assert.equal(codeOf(() => readTicketKeys(at('others-write', keys, 0o602))), 'FORBIDDEN');
  assert.equal(codeOf(() => readTicketKeys(at('group-write', keys, 0o660))), 'FORBIDDEN');
  // Group read, as the package's TLS key (root:steward-control 0640).
  assert.deepEqual(readTicketKeys(at('group-read', keys, 0o640)), keys);
  assert.equal(codeOf(() => readTicketKeys(path.join(dir, 'missing'))), 'NOT_FOUND');
  mkdirSync(path.join(dir, 'folder'), { mode: 0o700 });
  assert.equal(codeOf(() => readTicketKeys(path.join(dir, 'folder'))), 'USAGE');
});

async function serve(t: TestContext, db: string, flags: string[]): Promise<{ port: number }> {
  const server = await startServeProcess(db, flags);
  t.after(() => server.stop());
  return { port: Number(new URL(server.urls.listening).port) };
}

test('instances that share --tls-ticket-keys resume each other\'s sessions; one with other keys does not', { timeout: 60_000 }, async (t) => {
  if (!hasOpenssl()) return skipUnlessCI(t, 'openssl is not installed: cannot make a certificate');
  const dir = tempDir(t);
  const { keyFile: key, certFile: cert, cert: ca } = selfSignedCert(dir);
  const shared = path.join(dir, 'ticket.keys');
  writeFileSync(shared, randomBytes(48), { mode: 0o600 });
  const db = path.join(dir, 'control.db');
  execFileSync(process.execPath, [BIN, '--db', db, 'init'], { stdio: 'ignore' });
  const tlsFlags = ['--tls-cert', cert, '--tls-key', key];
  const a = await serve(t, db, [...tlsFlags, '--tls-ticket-keys', shared]);
  const b = await serve(t, db, [...tlsFlags, '--tls-ticket-keys', shared]);
  const c = await serve(t, db, tlsFlags);
  const first = await connect(a.port, ca);
  assert.equal(first.reused, false);
  assert.ok(first.session, 'instance a gave a session');
  assert.equal((await connect(a.port, ca, first.session)).reused, true, 'a resumes its own session');
  assert.equal((await connect(b.port, ca, first.session)).reused, true, 'b, with the same keys, resumes a\'s session');
  assert.equal((await connect(c.port, ca, first.session)).reused, false, 'c, with keys of its own, makes a full handshake');
});

test('serve refuses --tls-ticket-keys without TLS, and a keys file others can read, before it listens', (t) => {
  const dir = tempDir(t);
  const db = path.join(dir, 'control.db');
  execFileSync(process.execPath, [BIN, '--db', db, 'init'], { stdio: 'ignore' });
  const open = path.join(dir, 'open.keys');
  writeFileSync(open, randomBytes(48), { mode: 0o644 });
  chmodSync(open, 0o644);
  const run = (...flags: string[]) => spawnSync(process.execPath, [BIN, '--db', db, '--json', 'serve', '--listen', '127.0.0.1:0', ...flags], { encoding: 'utf8', timeout: 30_000 });
  const noTls = run('--tls-ticket-keys', open);
  assert.equal(noTls.status, 2, noTls.stderr + noTls.stdout);
  assert.deepEqual((JSON.parse(noTls.stdout) as { error: unknown }).error, { code: 'USAGE', message: '--tls-ticket-keys goes with --tls-cert and --tls-key' });
  const cert = path.join(dir, 'cert.pem');
  writeFileSync(cert, 'not a certificate: serve refuses the keys before it parses this');
  const readable = run('--tls-cert', cert, '--tls-key', cert, '--tls-ticket-keys', open);
  assert.equal(readable.status, 3, readable.stderr + readable.stdout);
  const error = (JSON.parse(readable.stdout) as { error: { code: string; message: string } }).error;
  assert.equal(error.code, 'FORBIDDEN');
  assert.match(error.message, /open to others, or writable by group \(mode 644\): chmod 600 or 640/);
});

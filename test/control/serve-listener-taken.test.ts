// `steward-control serve` whose listener cannot start (its port taken by another process) exits
// non-zero at once with USAGE naming the option and the address, for each listener kind: the
// fleet's (http and https), --admin-listen's (http and https) and --metrics-listen's. Before, it
// ran on with no listener, its rollout ticker logging errors every second ("active (running)"
// under systemd).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CONTROL_BIN } from '../helpers/serve-process.js';
import { hasOpenssl, selfSignedCert } from '../helpers/tls-cert.js';

// A port held by a listener of this test process, as another program's would be.
async function takePort(): Promise<{ port: number; release(): Promise<void> }> {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  return { port: (holder.address() as net.AddressInfo).port, release: () => new Promise((r) => holder.close(() => r())) };
}

// Runs serve with `args` and resolves its exit code and output; a serve still running after 20 s
// is killed and reported as such (null).
function runServe(db: string, args: string[], json = false): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CONTROL_BIN, '--db', db, ...(json ? ['--json'] : []), 'serve', '--init', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const KINDS: { name: string; flag: string; tls: boolean; args(port: number): string[] }[] = [
  { name: 'the fleet listener (http)', flag: '--listen', tls: false, args: (p) => ['--listen', `127.0.0.1:${p}`] },
  { name: 'the fleet listener (https)', flag: '--listen', tls: true, args: (p) => ['--listen', `127.0.0.1:${p}`] },
  { name: 'the admin listener (http)', flag: '--admin-listen', tls: false, args: (p) => ['--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--admin-listen', `127.0.0.1:${p}`] },
  { name: 'the admin listener (https)', flag: '--admin-listen', tls: true, args: (p) => ['--listen', '127.0.0.1:0', '--admin-listen', `127.0.0.1:${p}`] },
  { name: 'the metrics listener', flag: '--metrics-listen', tls: false, args: (p) => ['--listen', '127.0.0.1:0', '--admin-listen', '127.0.0.1:0', '--metrics-listen', `127.0.0.1:${p}`] },
];

for (const kind of KINDS) {
  test(`serve exits 2 with USAGE naming ${kind.flag} and the address when ${kind.name} finds its port taken`, async (t) => {
    if (kind.tls && !hasOpenssl()) return t.skip('openssl is not installed: no certificate to serve https with');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-serve-taken-'));
    const taken = await takePort();
    try {
      const tls = kind.tls ? selfSignedCert(dir) : null;
      const args = [...kind.args(taken.port), ...(tls ? ['--tls-cert', tls.certFile, '--tls-key', tls.keyFile] : [])];
      const r = await runServe(path.join(dir, 'control.db'), args);
      assert.notEqual(r.code, null, `serve was still running 20 s later with ${kind.flag} unusable; its log: ${r.stderr.slice(-1500)}`);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`steward-control: USAGE: ${kind.flag}: cannot listen on 127\\.0\\.0\\.1:${taken.port}: the address is in use .*\\(EADDRINUSE\\)`));
      assert.equal(r.stdout, '', 'nothing claims to listen');
      assert.doesNotMatch(r.stderr, /tick failed/);
    } finally {
      await taken.release();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('serve --json reports a taken port as {ok:false, error:{code:"USAGE"}} on stdout', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-serve-taken-'));
  const taken = await takePort();
  try {
    const db = path.join(dir, 'control.db');
    const r = await runServe(db, ['--listen', '127.0.0.1:0', '--admin-listen', `127.0.0.1:${taken.port}`], true);
    assert.equal(r.code, 2, r.stderr);
    const out = JSON.parse(r.stdout) as { ok: boolean; error: { code: string; message: string } };
    assert.equal(out.ok, false);
    assert.equal(out.error.code, 'USAGE');
    assert.match(out.error.message, new RegExp(`--admin-listen: cannot listen on 127\\.0\\.0\\.1:${taken.port}`));
  } finally {
    await taken.release();
    rmSync(dir, { recursive: true, force: true });
  }
});

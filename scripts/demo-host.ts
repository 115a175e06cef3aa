// npm run demo:host: one host, no control plane, end to end in a temp folder, no root needed.
// A release key signs three releases of app `web` (v1, a healthy v2, a v3 whose health
// check fails); the helper installs v1, updates to v2, rolls v3 back and quarantines it,
// the receipts are verified, and a helper killed during an activation recovers at restart.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeTree } from '../src/platform/fs-atomic.js';
import { generateKeyPair, parsePrivateKey, signEnvelope, DOMAINS } from '../src/platform/keys.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const AGENTCTL = path.join(REPO, 'bin/agentctl.js');
const HELPER = path.join(REPO, 'bin/steward-helper.js');
const isRoot = process.getuid?.() === 0;

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
function step(title: string): void {
  process.stdout.write(`\n${bold('== ' + title)}\n`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

const SERVER = `const http = require('http');
const healthy = process.env.HEALTHY !== 'no';
http.createServer((q, s) => { s.statusCode = q.url === '/healthz' && !healthy ? 500 : 200; s.end('web ' + process.env.STEWARD_VERSION + '\\n'); })
  .listen(Number(process.env.PORT), '127.0.0.1', () => console.log('web', process.env.STEWARD_VERSION, 'listening'));
`;

function buildRelease(dir: string, version: string, port: number, healthy: boolean): string {
  const src = path.join(dir, `src-${version}`);
  mkdirSync(src, { recursive: true });
  writeFileSync(path.join(src, 'server.js'), SERVER);
  writeFileSync(
    path.join(src, 'steward-release.json'),
    JSON.stringify({
      name: 'web',
      version,
      start: { command: ['node', 'server.js'], env: { PORT: String(port), HEALTHY: healthy ? 'yes' : 'no' } },
      health: { http: `http://127.0.0.1:${port}/healthz`, timeoutMs: 3000, stableMs: 500 },
    }),
  );
  const tgz = path.join(dir, `web-${version}.tgz`);
  execFileSync('tar', ['czf', tgz, '-C', src, '.']);
  return tgz;
}

function agentctl(root: string, args: string[]): { code: number; out: string } {
  try {
    const out = execFileSync(process.execPath, [AGENTCTL, '--root', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { code: 0, out };
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    return { code: e.status, out: e.stdout + e.stderr };
  }
}

function show(root: string, args: string[]): number {
  process.stdout.write(`$ agentctl ${args.join(' ')}\n`);
  const r = agentctl(root, args);
  process.stdout.write(r.out.replace(/^/gm, '  ') + `  (exit ${r.code})\n`);
  return r.code;
}

async function startHelper(root: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; log: () => string }> {
  let log = '';
  const child = spawn(process.execPath, [HELPER, '--root', root], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  child.stderr?.on('data', (c) => (log += c));
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`the helper exited: ${log}`);
    const st = agentctl(root, ['status', '--json']);
    // Ready once the start (recovery, first pass) is done: until then updates get RECOVERING.
    if (st.code === 0 && JSON.parse(st.out).recovering === false) return { child, log: () => log };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the helper did not start: ${log}`);
}

function stopped(child: ChildProcess): Promise<NodeJS.Signals | null> {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(child.signalCode) : child.once('exit', (_c, s) => resolve(s))));
}

async function main(): Promise<number> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-demo-'));
  chmodSync(base, 0o755);
  const root = path.join(base, 'host');
  const work = path.join(base, 'work');
  mkdirSync(path.join(root, 'etc/steward/trusted-keys/web'), { recursive: true, mode: 0o755 });
  mkdirSync(work, { mode: 0o755 });
  let helper: ChildProcess | null = null;
  try {
    step('A host in a temp folder');
    const app = { runner: 'process', keepReleases: 3, ...(isRoot ? { user: 'nobody', group: 'nogroup' } : {}) };
    writeFileSync(path.join(root, 'etc/steward/steward.json'), JSON.stringify({ apps: { web: app } }, null, 2));
    process.stdout.write(`root prefix ${root}\nhost config: ${JSON.stringify({ apps: { web: app } })}\n`);

    step('A release key, trusted for app web');
    const key = generateKeyPair();
    writeFileSync(path.join(root, `etc/steward/trusted-keys/web/${key.keyId}.pub`), key.publicPem);
    process.stdout.write(`key ${key.keyId} -> etc/steward/trusted-keys/web/\n`);

    step('Three releases, each with a signed manifest');
    const port = await freePort();
    const priv = parsePrivateKey(key.privatePem);
    const manifests: Record<string, { tgz: string; manifest: string }> = {};
    for (const [version, healthy] of [['1.0.0', true], ['2.0.0', true], ['3.0.0', false]] as const) {
      const tgz = buildRelease(work, version, port, healthy);
      const bytes = readFileSync(tgz);
      const payload = {
        name: 'web',
        version,
        url: `https://releases.example/web-${version}.tgz`,
        size: bytes.length,
        integrity: 'sha512-' + createHash('sha512').update(bytes).digest('base64'),
        expires: Date.now() + 86_400_000,
      };
      const manifest = path.join(work, `web-${version}.manifest.json`);
      writeFileSync(manifest, JSON.stringify(signEnvelope(DOMAINS.manifest, payload, priv)));
      manifests[version] = { tgz, manifest };
      process.stdout.write(`web ${version}: ${bytes.length} bytes, health ${healthy ? 'ok' : 'FAILS'}, manifest signed by ${key.keyId}\n`);
    }
    const src = (v: string) => ['--manifest', manifests[v]!.manifest, '--file', manifests[v]!.tgz];

    step('Start steward-helper');
    let h = await startHelper(root);
    helper = h.child;
    process.stdout.write(`helper pid ${helper.pid}\n`);

    step('Install v1, then update to v2');
    if (show(root, ['update', 'web', '1.0.0', ...src('1.0.0')]) !== 0) throw new Error('v1 did not install');
    if (show(root, ['update', 'web', '2.0.0', ...src('2.0.0')]) !== 0) throw new Error('v2 did not activate');
    process.stdout.write(`the app answers: ${await (await fetch(`http://127.0.0.1:${port}/`)).text()}`);

    step('Try v3, whose health check fails: rolled back, quarantined');
    if (show(root, ['update', 'web', '3.0.0', ...src('3.0.0')]) !== 4) throw new Error('v3 was not rolled back');
    process.stdout.write(`the app still answers: ${await (await fetch(`http://127.0.0.1:${port}/`)).text()}`);
    if (show(root, ['update', 'web', '3.0.0', ...src('3.0.0')]) !== 3) throw new Error('v3 was not refused as quarantined');

    step('The verified receipts');
    show(root, ['receipts', 'web']);

    step('Kill the helper (SIGKILL) during an activation: a rollback to v1, just after v1 started');
    helper.kill('SIGTERM');
    await stopped(helper);
    h = await startHelper(root, { STEWARD_FAULTS: 'after-start-new' });
    helper = h.child;
    show(root, ['rollback', 'web', '--attempt-id', 'demo-interrupted']);
    process.stdout.write(`helper died by ${await stopped(helper)} at: ${h.log().split('\n').filter((l) => l.includes('steward-fault-kill')).join(' ')}\n`);
    const journal = JSON.parse(readFileSync(path.join(root, 'var/lib/steward/journal/web.json'), 'utf8'));
    process.stdout.write(`the journal says ${journal.outcome} ${journal.fromVersion} -> ${journal.targetVersion}; current -> ${readlinkSync(path.join(root, 'opt/steward/apps/web/current'))}\n`);

    step('Restart: the helper recovers the interrupted activation before taking requests');
    h = await startHelper(root);
    helper = h.child;
    show(root, ['status', 'web']);
    show(root, ['receipts', 'web']);
    process.stdout.write(`the app answers: ${await (await fetch(`http://127.0.0.1:${port}/`)).text()}`);

    step('Clean up');
    const record = JSON.parse(readFileSync(path.join(root, 'var/lib/steward/supervisor/web.json'), 'utf8'));
    helper.kill('SIGTERM');
    await stopped(helper);
    helper = null;
    // The app outlives the helper by design; the demo stops it (its own process group).
    if (record.process?.pid) process.kill(-record.process.pid, 'SIGKILL');
    process.stdout.write('helper stopped, app stopped, temp folder removed\n');
    return 0;
  } finally {
    if (helper && helper.exitCode === null) helper.kill('SIGKILL');
    // Release trees are read-only; removeTree opens them first when not root.
    await removeTree(base);
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`demo failed: ${(err as Error).message}\n`);
    process.exit(1);
  },
);

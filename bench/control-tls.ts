// Row 7 tls: what an agent's connection over https costs `steward-control serve`, with the
// agent's own client (src/agent/control-plane-client.ts) as it is, each connection offering the
// TLS session of the one before, against the peer: the same request offering no session, so
// that every connection is a full handshake (what every agent connection was before). The
// figure is the server's CPU per connection, from /proc/<pid>/stat, the two sides in turn run by
// run; the request is a POST to a path the server does not have (a 404: no store, no
// signature), so what is measured is the connection: TCP, TLS, HTTP and the answer. Once with
// an EC P-256 certificate and once with an RSA-2048 one (an operator's certificate is either).
// Beside them, in the same runs, the same client's connections over plain http to a server
// without TLS (`plainUs`): what TLS adds to a connection.
//
//   node dist/bench/control-tls.js [--quick] [--json] [--runs N] [--connections N]
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createControlPlaneClient, type PostAnswer } from '../src/agent/control-plane-client.js';
import { readExtraCa } from '../src/platform/extra-ca.js';
import { startRequest } from '../src/platform/http-request.js';
import { benchArgs, cpuMsOf, haveCommand, ms, printRow, ratios, series } from './lib.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(root, 'bin', 'steward-control.js');
const args = benchArgs(5, 1, ['--connections']);
// Connections per side and run: enough CPU ticks (10 ms each) for the figure to be read to a
// few per cent (quick mode's 100 only shows that the script works).
const CONNECTIONS = Number(args.rest.connections ?? (args.quick ? 100 : 2000));
if (!Number.isInteger(CONNECTIONS) || CONNECTIONS < 10) throw new Error('--connections takes an integer of at least 10');
if (!haveCommand('openssl')) throw new Error('bench/control-tls needs openssl on PATH');

const KINDS = [
  { name: 'ec', what: 'EC P-256', key: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'] },
  { name: 'rsa', what: 'RSA-2048', key: ['-newkey', 'rsa:2048'] },
];

async function startServer(dir: string, tls?: { cert: string; key: string }): Promise<{ child: ChildProcess; url: string }> {
  const db = path.join(dir, tls ? 'control.db' : 'plain.db');
  execFileSync(process.execPath, [BIN, '--db', db, 'init'], { stdio: 'ignore' });
  const flags = tls ? ['--tls-cert', tls.cert, '--tls-key', tls.key] : [];
  const child = spawn(process.execPath, [BIN, '--db', db, '--json', 'serve', '--listen', '127.0.0.1:0', ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-4000)));
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`steward-control serve exited ${code} before listening: ${log}`)));
  });
  return { child, url: (JSON.parse(first) as { listening: string }).listening };
}

// The peer's connection: the request the agent's client makes (startRequest, the same CA list
// and so the same TLS context), but offering no session, so the server makes a full handshake.
function fullHandshake(u: URL, ca: string[] | undefined): Promise<PostAnswer> {
  return new Promise((resolve, reject) => {
    const req = startRequest(u, 'POST', { 'Content-Type': 'application/json', 'Content-Length': 2 }, ca);
    req.on('error', reject);
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: undefined }));
    });
    req.end('{}');
  });
}

// One plain-http server for both certificates' runs.
const plainDir = mkdtempSync(path.join(os.tmpdir(), 'steward-bench-tls-plain-'));
const plainServer = await startServer(plainDir);
const plain = await createControlPlaneClient({ url: plainServer.url });

try {
  for (const kind of KINDS) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-bench-tls-'));
    const cert = path.join(dir, 'cert.pem');
    const key = path.join(dir, 'key.pem');
    execFileSync('openssl', ['req', '-x509', ...kind.key, '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
    const server = await startServer(dir, { cert, key });
    try {
      const settings = { url: server.url, caFile: cert };
      const ca = await readExtraCa(cert);
      const kept = await createControlPlaneClient(settings);
      const sides = {
        resumed: () => kept.post('/bench-tls', {}),
        full: () => fullHandshake(new URL('/bench-tls', server.url), ca),
        plain: () => plain.post('/bench-tls', {}),
      };
      const cpu: Record<keyof typeof sides, number[]> = { resumed: [], full: [], plain: [] };
      const wall: Record<keyof typeof sides, number[]> = { resumed: [], full: [], plain: [] };
      // Run 0 warms the sides up and is not counted.
      for (let run = 0; run <= args.runs; run++) {
        for (const side of ['resumed', 'full', 'plain'] as const) {
          const pid = (side === 'plain' ? plainServer : server).child.pid as number;
          const c0 = cpuMsOf(pid);
          const t0 = process.hrtime.bigint();
          for (let i = 0; i < CONNECTIONS; i++) {
            const answer = await sides[side]();
            if (answer.status !== 404) throw new Error(`the server answered ${answer.status}, not 404`);
          }
          const took = ms(t0);
          if (run === 0) continue;
          cpu[side].push(((cpuMsOf(pid) - c0) * 1000) / CONNECTIONS);
          wall[side].push(took / CONNECTIONS);
        }
      }
      printRow(args, {
        row: `7 tls ${kind.name}`,
        what: `steward-control server CPU per https connection (${kind.what} certificate), the agent's client resuming its last TLS session, ${CONNECTIONS} connections a run`,
        unit: 'us',
        steward: series(cpu.resumed),
        peer: series(cpu.full),
        peerWhat: 'the same request offering no session: a full handshake each',
        ratio: series(ratios(cpu.resumed, cpu.full)),
        target: 'none (reported beside row 7)',
        met: true,
        extra: { plainUs: series(cpu.plain).median, wallMsResumed: series(wall.resumed).median, wallMsFull: series(wall.full).median, wallMsPlain: series(wall.plain).median },
        notes: 'a POST of {} to a path the server does not have (404): the connection alone, no store or signature',
      });
    } finally {
      server.child.kill('SIGTERM');
      await new Promise((r) => server.child.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  plainServer.child.kill('SIGTERM');
  await new Promise((r) => plainServer.child.once('exit', r));
  rmSync(plainDir, { recursive: true, force: true });
}

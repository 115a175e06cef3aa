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
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createControlPlaneClient, type PostAnswer } from '../src/agent/control-plane-client.js';
import { readExtraCa } from '../src/platform/extra-ca.js';
import { startRequest } from '../src/platform/http-request.js';
import { CONTROL_BIN, startServeProcess, type ServeProcess } from '../test/helpers/serve-process.js';
import { EC_P256, RSA_2048, selfSignedCert } from '../test/helpers/tls-cert.js';
import { benchArgs, cpuMsOf, haveCommand, ms, printRow, ratios, series } from './lib.js';

const args = benchArgs(5, 1, ['--connections']);
// Connections per side and run: enough CPU ticks (10 ms each) for the figure to be read to a
// few per cent (quick mode's 100 only shows that the script works).
const CONNECTIONS = Number(args.rest.connections ?? (args.quick ? 100 : 2000));
if (!Number.isInteger(CONNECTIONS) || CONNECTIONS < 10) throw new Error('--connections takes an integer of at least 10');
if (!haveCommand('openssl')) throw new Error('bench/control-tls needs openssl on PATH');

const KINDS = [
  { name: 'ec', what: 'EC P-256', key: EC_P256 },
  { name: 'rsa', what: 'RSA-2048', key: RSA_2048 },
];

// The server, its own database in `dir`, with TLS when `tls` is given.
async function startServer(dir: string, tls?: { cert: string; key: string }): Promise<ServeProcess> {
  const db = path.join(dir, tls ? 'control.db' : 'plain.db');
  execFileSync(process.execPath, [CONTROL_BIN, '--db', db, 'init'], { stdio: 'ignore' });
  return startServeProcess(db, tls ? ['--tls-cert', tls.cert, '--tls-key', tls.key] : []);
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
const plain = await createControlPlaneClient({ url: plainServer.urls.listening });

try {
  for (const kind of KINDS) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-bench-tls-'));
    const { certFile: cert, keyFile: key } = selfSignedCert(dir, 'cert', kind.key);
    const server = await startServer(dir, { cert, key });
    try {
      const settings = { url: server.urls.listening, caFile: cert };
      const ca = await readExtraCa(cert);
      const kept = await createControlPlaneClient(settings);
      const sides = {
        resumed: () => kept.post('/bench-tls', {}),
        full: () => fullHandshake(new URL('/bench-tls', server.urls.listening), ca),
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
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  await plainServer.stop();
  rmSync(plainDir, { recursive: true, force: true });
}

// `steward-control --server http://<not loopback>` would send the operator token across the
// network in clear text (docs/design.md §12): the CLI refuses before it opens a connection, from the
// flag and from STEWARD_CONTROL_URL alike. Plain http to loopback is allowed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { exitCodeFor } from '../../src/cli/error-message.js';
import { REPO } from '../helpers/host.js';

const BIN = path.join(REPO, 'bin', 'steward-control.js');
const TOKEN = 'so_' + 'D'.repeat(32);

// A TCP listener on every address of this host that records what reaches it.
let listener: net.Server;
let port = 0;
const received: string[] = [];

before(async () => {
  listener = net.createServer((s) => {
    s.on('data', (d) => received.push(d.toString('latin1')));
    s.on('error', () => undefined);
    // Not HTTP: the CLI reports the server as unreachable, which is all a loopback run needs.
    s.end();
  });
  await new Promise<void>((r) => listener.listen(0, '0.0.0.0', r));
  port = (listener.address() as net.AddressInfo).port;
});
after(() => new Promise<void>((r) => listener.close(() => r())));

// This host's first non-loopback IPv4 address, or a documentation address nothing answers on.
const farHost = () => Object.values(os.networkInterfaces()).flat().find((i) => i && i.family === 'IPv4' && !i.internal)?.address ?? '192.0.2.1';

function cli(args: string[], env: Record<string, string>): Promise<{ code: number; json: any }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args, '--json'], { env: { ...process.env, DEBUG: '', STEWARD_CONTROL_DB: '', STEWARD_CONTROL_TOKEN: TOKEN, ...env } }, (err, stdout) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, json: JSON.parse(stdout) });
    });
  });
}

for (const how of ['--server', 'STEWARD_CONTROL_URL'] as const) {
  test(`${how} http:// to a non-loopback host is refused FORBIDDEN (exit 3) and nothing is sent`, async () => {
    received.length = 0;
    const url = `http://${farHost()}:${port}`;
    const r = how === '--server' ? await cli(['--server', url, 'nodes'], {}) : await cli(['nodes'], { STEWARD_CONTROL_URL: url });
    assert.deepEqual([r.code, r.json.error.code], [exitCodeFor('FORBIDDEN'), 'FORBIDDEN']);
    assert.match(r.json.error.message, /plain http is refused except to loopback/);
    assert.deepEqual(received, [], 'no connection carried the token');
  });
}

test('--server http:// to loopback is allowed: the request, with its token, is made', async () => {
  received.length = 0;
  const r = await cli(['--server', `http://127.0.0.1:${port}`, 'nodes'], {});
  assert.deepEqual([r.code, r.json.error.code], [exitCodeFor('CONTROL_PLANE_UNREACHABLE'), 'CONTROL_PLANE_UNREACHABLE']);
  assert.match(received.join(''), new RegExp(`authorization: Bearer ${TOKEN}`, 'i'));
});

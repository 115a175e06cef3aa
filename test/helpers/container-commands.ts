import assert from 'node:assert/strict';
import { CONTAINER_REPO, type SystemdContainer } from './systemd-container.js';

// Commands the systemd container suites run inside their container, shared by them.

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  // stdout parsed as JSON, or null.
  json: any;
  // stdout then stderr, for assertion messages.
  text: string;
}

// Runs a command inside the container; never rejects on its exit code.
export async function runIn(box: SystemdContainer, cmd: string, args: string[] = [], timeoutMs = 60_000): Promise<RunResult> {
  const r = await box.exec(cmd, args, { timeoutMs });
  let json: any = null;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    // not JSON
  }
  return { ...r, json, text: `${r.stdout}${r.stderr}` };
}

// Writes bytes to a file inside the container (umask 022).
export async function writeIn(box: SystemdContainer, file: string, bytes: Buffer | string): Promise<void> {
  const child = box.spawn('/bin/sh', ['-c', 'umask 022 && cat > "$1"', 'sh', file]);
  const code = await new Promise<number | null>((resolve) => {
    child.once('close', (c) => resolve(c));
    child.stdin?.end(bytes);
  });
  assert.equal(code, 0, `writing ${file} in the container`);
}

export const CONTROL_BIN = `${CONTAINER_REPO}/bin/steward-control.js`;

// `steward-control serve` on the container's loopback with `db`; resolves with its URL once it
// listens. Call stop() before the container stops: nsenter's child would outlive a poweroff and
// keep the test process alive on the pipe. stop() is idempotent.
export async function serveControl(box: SystemdContainer, db: string, heartbeatSeconds: number): Promise<{ url: string; stop: () => Promise<void> }> {
  const serve = box.spawn('/usr/bin/node', [CONTROL_BIN, 'serve', '--db', db, '--listen', '127.0.0.1:0', '--heartbeat-seconds', String(heartbeatSeconds)]);
  const served = new Promise<void>((resolve) => serve.once('close', () => resolve()));
  const stop = async () => {
    if (serve.exitCode !== null || serve.signalCode !== null) return;
    await box.exec('/usr/bin/pkill', ['-TERM', '-f', `^/usr/bin/node ${CONTROL_BIN} serve`]);
    serve.kill('SIGTERM');
    const k = setTimeout(() => serve.kill('SIGKILL'), 5000);
    await served;
    clearTimeout(k);
  };
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    serve.stdout?.on('data', (c) => {
      out += c;
      const m = /listening on (\S+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    serve.once('close', (code) => reject(new Error(`steward-control serve exited ${code}`)));
  });
  return { url, stop };
}

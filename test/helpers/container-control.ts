import { CONTAINER_REPO, type SystemdContainer } from './systemd-container.js';

// steward-control inside a booted test container, for the suites that enroll a host there.

export const CONTROL_BIN = `${CONTAINER_REPO}/bin/steward-control.js`;

// `steward-control serve` on the container's loopback with `db`; resolves with its URL once it
// listens. Call stop() before the container stops: nsenter's child would outlive a poweroff and
// keep the test process alive on the pipe. stop() is idempotent.
export async function serveControl(box: SystemdContainer, db: string, heartbeatSeconds: number): Promise<{ url: string; stop: () => Promise<void> }> {
  const serve = box.spawn('/usr/bin/node', [CONTROL_BIN, 'serve', '--init', '--db', db, '--listen', '127.0.0.1:0', '--heartbeat-seconds', String(heartbeatSeconds)]);
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

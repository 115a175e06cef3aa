import type { ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { CONTAINER_REPO, type SystemdContainer } from './systemd-container.js';

// Drives test/fixtures/systemd/run-app.mjs, a stand-in helper inside a systemd container:
// one JSON command per line in, one JSON reply per line out, exit events as they are heard.

export const SYSTEMD_FIXTURES = `${CONTAINER_REPO}/test/fixtures/systemd`;

export interface Reply {
  id?: number;
  ok: boolean;
  error?: string;
  [k: string]: unknown;
}
export interface ExitEvent {
  event: 'exited';
  app: string;
  pid: number;
  info: { code: number | null; signal: string | null; reason?: string };
  heardAt: number;
  heardMs?: number;
}

// One run of run-app.mjs inside the container.
export class Driver {
  private nextId = 1;
  private pending = new Map<number, (r: Reply) => void>();
  private events: Array<Record<string, unknown>> = [];
  private waiters: Array<() => void> = [];
  private stderr = '';
  readonly ready: Promise<number>;

  constructor(readonly child: ChildProcess) {
    child.stderr?.on('data', (c) => (this.stderr += c));
    const rl = readline.createInterface({ input: child.stdout! });
    rl.on('line', (line) => {
      const msg = JSON.parse(line) as Reply & { event?: string };
      if (msg.event) {
        this.events.push(msg);
        for (const w of this.waiters.splice(0)) w();
      } else if (typeof msg.id === 'number') this.pending.get(msg.id)?.(msg);
    });
    this.ready = this.nextEvent((e) => e.event === 'ready', 15_000).then((e) => e.pid as number);
  }

  async call<T = Reply>(op: string, payload: Record<string, unknown> = {}): Promise<T> {
    const id = this.nextId++;
    const reply = new Promise<Reply>((resolve) => this.pending.set(id, resolve));
    this.child.stdin!.write(JSON.stringify({ id, op, ...payload }) + '\n');
    const r = await reply;
    if (!r.ok) throw new Error(`${op} failed: ${r.error} (stderr: ${this.stderr.slice(-2000)})`);
    return r as T;
  }

  async nextEvent(pred: (e: Record<string, unknown>) => boolean, timeoutMs: number): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.events.findIndex(pred);
      if (i >= 0) return this.events.splice(i, 1)[0]!;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching event within ${timeoutMs} ms (stderr: ${this.stderr.slice(-2000)})`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }
}

export function startDriver(box: SystemdContainer): Driver {
  // HELPER_SECRET is in the stand-in helper's environment: it must not reach any app.
  const child = box.spawn('/usr/bin/node', [`${SYSTEMD_FIXTURES}/run-app.mjs`], {
    env: { PATH: '/usr/bin:/bin', HELPER_SECRET: 'must-not-leak' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return new Driver(child);
}

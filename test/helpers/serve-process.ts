import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { REPO } from './host.js';

// `steward-control serve` as its own process, for the tests and benches that need a real one:
// `steward-control --db DB --json serve --listen 127.0.0.1:0 ARGS...`, resolved once it printed
// its one JSON line (its URLs), with the last 4,000 characters of its log for a failure's
// message. `bin`: another build's bin/steward-control.js; `nodeArgs`: node's own flags; `env`: its
// environment (default this process's).

export interface ServeProcess {
  child: ChildProcess;
  urls: { listening: string; admin?: string; metrics?: string };
  log(): string;
  // SIGTERM, then its exit.
  stop(): Promise<void>;
}

export const CONTROL_BIN = path.join(REPO, 'bin', 'steward-control.js');

export async function startServeProcess(db: string, args: string[] = [], opts: { bin?: string; nodeArgs?: string[]; env?: NodeJS.ProcessEnv } = {}): Promise<ServeProcess> {
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), opts.bin ?? CONTROL_BIN, '--db', db, '--json', 'serve', '--listen', '127.0.0.1:0', ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...(opts.env ? { env: opts.env } : {}) });
  let log = '';
  child.stderr!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-4000)));
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`steward-control serve exited ${code} before listening: ${log}`)));
  });
  return {
    child,
    urls: JSON.parse(first) as ServeProcess['urls'],
    log: () => log,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

// Whole-fleet test pieces: steward-control and steward-agent as real child processes.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { isPostgresUrl } from '../../src/control/store/postgres/open-postgres-store.js';
import { pollPause } from './helper-status.js';
import { REPO, type TestHost } from './host.js';

const CONTROL = path.join(REPO, 'bin/steward-control.js');
const AGENT = path.join(REPO, 'bin/steward-agent.js');

export interface Daemon {
  child: ChildProcess;
  output(): string;
  // SIGTERM, then SIGKILL after 10 s; resolves once it exited.
  stop(): Promise<void>;
  // SIGKILL; resolves once it exited.
  kill(): Promise<void>;
}

function daemon(args: string[], env: Record<string, string>): Daemon {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  child.stdout?.on('data', (c) => (out += c));
  child.stderr?.on('data', (c) => (out += c));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    output: () => out,
    stop: async () => {
      if (alive()) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
    kill: async () => {
      if (alive()) child.kill('SIGKILL');
      await exited;
    },
  };
}

export interface ControlCliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

// Runs `steward-control --db <db> ...args` (without --db when `db` is null).
export function controlCli(db: string | null, args: string[]): Promise<ControlCliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CONTROL, ...(db === null ? [] : ['--db', db]), ...args], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        /* not JSON */
      }
      resolve({ code, stdout, stderr, json });
    });
  });
}

// Runs `steward-control --db <db> ...args --json` and answers its JSON; a non-zero exit throws,
// naming the command and what it printed.
export async function controlJson(db: string | null, args: string[]): Promise<any> {
  const r = await controlCli(db, [...args, '--json']);
  if (r.code !== 0) throw new Error(`steward-control ${args.join(' ')} exited ${r.code}: ${r.stdout}${r.stderr}`);
  return r.json;
}

// Starts the `steward-control serve` program on 127.0.0.1:<port> and waits for its "listening on" line.
// `bin`: another build's bin/steward-control.js (the compatibility tests); `args`: more serve flags.
// `env`: more variables (the test-only stop points, server/test-stop-points.ts).
export async function startControlDaemon(db: string, port: number, heartbeatSeconds = 1, o: { bin?: string; args?: string[]; env?: Record<string, string> } = {}): Promise<Daemon & { url: string }> {
  // PostgreSQL has no --init: its schema is made by migrate (or restore, copy).
  const init = isPostgresUrl(db) ? [] : ['--init'];
  const d = daemon([o.bin ?? CONTROL, '--db', db, 'serve', ...init, '--listen', `127.0.0.1:${port}`, '--heartbeat-seconds', String(heartbeatSeconds), ...(o.args ?? [])], { DEBUG: 'steward:*', ...o.env });
  const deadline = Date.now() + 15_000;
  for (;;) {
    const m = /listening on (\S+)/.exec(d.output());
    if (m) return { ...d, url: m[1] as string };
    if (d.child.exitCode !== null) throw new Error(`steward-control exited ${d.child.exitCode}: ${d.output()}`);
    if (Date.now() > deadline) {
      await d.kill();
      throw new Error(`steward-control did not listen within 15 s: ${d.output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Starts the `steward-agent --root <host>` program as a Daemon (agent-process.ts: one to wait on).
export function startAgentDaemon(host: TestHost): Daemon {
  return daemon([AGENT, '--root', host.root], { DEBUG: 'steward:agent*' });
}

// Polls `check` every 200 ms (helper-status.ts: pollPause) until it returns something other than undefined; throws after `ms`.
export async function waitUntil<T>(what: string, ms: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const t0 = Date.now();
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await pollPause(200, Date.now() - t0);
  }
}

// The demo's processes: the four steward programs run as child processes, the way an operator
// would run them, each host in its own root prefix.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const BIN = {
  agentctl: path.join(REPO, 'bin/agentctl.js'),
  helper: path.join(REPO, 'bin/steward-helper.js'),
  agent: path.join(REPO, 'bin/steward-agent.js'),
  control: path.join(REPO, 'bin/steward-control.js'),
};

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

// Runs one command to its end.
export function run(bin: keyof typeof BIN, args: string[], env: Record<string, string> = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN[bin], ...args], { env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

// Runs one command that must succeed and print JSON; returns the parsed document.
export async function runJson<T = any>(bin: keyof typeof BIN, args: string[]): Promise<T> {
  const r = await run(bin, [...args, '--json']);
  if (r.code !== 0) throw new Error(`${bin} ${args.join(' ')} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
  return JSON.parse(r.stdout) as T;
}

export interface Daemon {
  name: string;
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

// Starts a long-running program; its stdout and stderr are kept for the end (and for errors).
export function startDaemon(name: string, bin: keyof typeof BIN, args: string[], env: Record<string, string> = {}): Daemon {
  const child = spawn(process.execPath, [BIN[bin], ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  child.stdout?.on('data', (c) => (out += c));
  child.stderr?.on('data', (c) => (out += c));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    name,
    child,
    output: () => out,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// Polls `check` every 200 ms until it returns a value other than undefined, or throws after `ms`.
export async function waitFor<T>(what: string, ms: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

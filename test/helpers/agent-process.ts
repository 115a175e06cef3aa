// Runs steward-agent as a real child process against a test host.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { HostFixture } from './host-fixture.js';
import { REPO, type TestHost } from './host.js';
import { pollPause } from './helper-status.js';

export const AGENT_BIN = path.join(REPO, 'bin/steward-agent.js');

export interface AgentProcess {
  child: ChildProcess;
  stderr(): string;
  // Polls `check` every 50 ms until it returns true; fails with the agent's stderr after timeoutMs.
  waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs?: number): Promise<void>;
  stop(): Promise<number | null>;
}

// Starts `steward-agent --root <host>` with all of steward's logs on; on a host fixture
// (host-fixture.ts), the host's teardown stops it before the helper.
export function startAgentProcess(host: TestHost | HostFixture, args: string[] = [], bin: string = AGENT_BIN): AgentProcess {
  const child = spawn(process.execPath, [bin, '--root', host.root, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, DEBUG: 'steward:*' },
  });
  let err = '';
  child.stderr?.on('data', (c) => (err += c));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const agent: AgentProcess = {
    child,
    stderr: () => err,
    async waitFor(what, check, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const t0 = Date.now();
        if (await check()) return;
        if (child.exitCode !== null) throw new Error(`steward-agent exited ${child.exitCode} while waiting for ${what}:\n${err}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${err.slice(-4000)}`);
        await pollPause(50, Date.now() - t0);
      }
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  if ('stopFirst' in host) host.stopFirst(() => agent.stop());
  return agent;
}

import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// PM2, the peer issue 8 names, installed at bench time into a cache folder rather than as a
// devDependency: it is only the yardstick of two bench rows, its 77 packages would otherwise be
// installed by every `npm ci` of the test suite, and it is AGPL-3.0, which nothing steward ships
// should pull in. Pinned, so every run measures the same PM2.
export const PM2_VERSION = '7.0.4';

export function pm2CacheDir(): string {
  return process.env.STEWARD_BENCH_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'steward-bench');
}

// The path of pm2's CLI script, installing it first (npm, the registry's ordinary client) when
// the cache does not have this version.
export function ensurePm2(): string {
  const dir = path.join(pm2CacheDir(), `pm2-${PM2_VERSION}`);
  const bin = path.join(dir, 'node_modules/pm2/bin/pm2');
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  process.stderr.write(`bench: installing pm2@${PM2_VERSION} into ${dir} (once; .ci/run does it before the suite)\n`);
  try {
    // Bounded: a registry that does not answer is a named failure, not a hung bench.
    execFileSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', dir, `pm2@${PM2_VERSION}`], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000, killSignal: 'SIGKILL' });
  } catch (err) {
    throw new Error(`cannot install pm2@${PM2_VERSION}, the bench's peer, into ${dir}: ${(err as Error).message}`);
  }
  if (!existsSync(bin)) throw new Error(`npm installed pm2@${PM2_VERSION} but ${bin} is missing`);
  return bin;
}

export interface Pm2 {
  home: string;
  run(args: string[]): Promise<string>;
  // The PM2 daemon's pid (God daemon), from PM2_HOME/pm2.pid.
  daemonPid(): number;
  // `pm2 kill`: stops the apps and the daemon.
  kill(): Promise<void>;
}

// A PM2 with its own PM2_HOME (never the user's ~/.pm2).
export function pm2In(home: string): Pm2 {
  const bin = ensurePm2();
  const env = { ...process.env, PM2_HOME: home, PM2_DISABLE_VERSION_CHECK: 'true' };
  const run = (args: string[]) =>
    new Promise<string>((resolve, reject) => {
      execFile(process.execPath, [bin, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
        if (err) reject(new Error(`pm2 ${args.join(' ')}: ${err.message}\n${stdout}${stderr}`));
        else resolve(String(stdout));
      });
    });
  return {
    home,
    run,
    daemonPid: () => Number(execFileSync('cat', [path.join(home, 'pm2.pid')], { encoding: 'utf8' }).trim()),
    kill: async () => {
      await run(['kill']).catch(() => undefined);
    },
  };
}

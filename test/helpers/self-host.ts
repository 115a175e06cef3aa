// A host for the self-update tests (docs/design.md §14): a temp root whose app `steward` (runner self)
// is steward's real built code, laid out as a release by `pack-steward`'s own code, and a
// "package" folder laid out the same way, started through the real launcher
// (systemd/steward-launcher) with this test's node as the runtime. Each start of the launcher is
// one start of the helper's unit; `restartCommand` stands for `systemctl --no-block restart`: it
// ends the helper, and `run` starts the launcher again as systemd's Restart= would.
import { spawn, type ChildProcess } from 'node:child_process';
import { after } from 'node:test';
import { mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { layOutStewardTree } from '../../src/platform/release-tree.js';
import { helperStatus } from './helper-status.js';
import { makeHost, makeReleaseKey, REPO, type ReleaseKey, type TestHost } from './host.js';
import { stewardReleaseFiles, type StewardReleaseFiles } from './self-release.js';
import { LAUNCHER, SHELL } from './launcher-host.js';

// The launchers and hosts a test file starts: once the file's tests end, every child still
// running is SIGKILLed and every host removed.
export function cleanedUpAfter(): { children: ChildProcess[]; hosts: SelfHost[] } {
  const children: ChildProcess[] = [];
  const hosts: SelfHost[] = [];
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const h of hosts) h.cleanup();
  });
  return { children, hosts };
}

export interface SelfHost extends TestHost {
  key: ReleaseKey;
  // The installed package's version: an apt upgrade changes it (upgradePackage).
  packageVersion: string;
  // Every version a launcher start ran, in order (each helper appends its own at start).
  ranLog: string;
}

// What a release of the test does at its start, before steward's code runs.
export type SelfBehaviour = 'good' | 'exit' | 'wrong-version' | 'hang';

export async function makeSelfHost(packageVersion: string, config: Record<string, unknown>): Promise<SelfHost> {
  const host = makeHost(config);
  const key = makeReleaseKey(host, ['steward']);
  const ranLog = path.join(host.scratch, 'ran.log');
  writeFileSync(ranLog, '');
  await layOutTree(path.join(host.scratch, 'pkg', packageVersion), packageVersion, 'good', ranLog);
  return { ...host, key, packageVersion, ranLog };
}

// An apt upgrade: the package's tree of `version` is laid out and is the one the launcher runs.
export async function upgradePackage(host: SelfHost, version: string, behaviour: SelfBehaviour = 'good'): Promise<void> {
  await layOutTree(path.join(host.scratch, 'pkg', version), version, behaviour, host.ranLog);
  host.packageVersion = version;
}

// A signed release of steward `version` behaving as told: its tarball and manifest envelope.
export function stewardRelease(host: SelfHost, version: string, behaviour: SelfBehaviour): Promise<StewardReleaseFiles> {
  return stewardReleaseFiles(host.scratch, host.key, version, (tree) => adjustTree(tree, version, behaviour, host.ranLog));
}

async function layOutTree(dir: string, version: string, behaviour: SelfBehaviour, ranLog: string): Promise<void> {
  mkdirSync(path.dirname(dir), { recursive: true, mode: 0o755 });
  await layOutStewardTree(REPO, dir, version);
  adjustTree(dir, version, behaviour, ranLog);
}

function adjustTree(dir: string, version: string, behaviour: SelfBehaviour, ranLog: string): void {
  // The helper's entry notes each run, then behaves as told before steward's code loads.
  const entry = path.join(dir, 'bin/steward-helper.js');
  const pre: Record<SelfBehaviour, string> = {
    good: '',
    exit: 'process.exit(3);\n',
    hang: 'setInterval(() => {}, 1000); await new Promise(() => {});\n',
    'wrong-version': '',
  };
  writeFileSync(entry, `import { appendFileSync } from 'node:fs';\nappendFileSync(${JSON.stringify(ranLog)}, ${JSON.stringify(version)} + '\\n');\n${pre[behaviour]}${readFileSync(entry, 'utf8')}`);
  if (behaviour === 'wrong-version') {
    // Binds its sockets, then fails its self-check: its code says it is another version.
    const pkg = path.join(dir, 'package.json');
    writeFileSync(pkg, JSON.stringify({ ...JSON.parse(readFileSync(pkg, 'utf8')), version: `${version}-other` }));
  }
}

// One start of the unit: the launcher, which execs the helper it chose.
export function startLauncher(host: SelfHost, env: Record<string, string> = {}): ChildProcess {
  return spawn(SHELL, [LAUNCHER], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      PATH: process.env.PATH,
      DEBUG: 'steward:*',
      STEWARD_PACKAGE_DIR: path.join(host.scratch, 'pkg', host.packageVersion),
      STEWARD_LAUNCHER_ROOT: host.root,
      STEWARD_NODE: process.execPath,
      // The handover's restart: SIGTERM to the helper that ran it (its parent), which exits.
      STEWARD_SELF_RESTART_COMMAND: JSON.stringify(['/bin/sh', '-c', 'echo "$0" >>"$RESTARTS"; kill -TERM $PPID']),
      RESTARTS: path.join(host.scratch, 'restarts.log'),
      ...env,
    },
  });
}

// The versions the launcher's starts ran so far.
export function ranVersions(host: SelfHost): string[] {
  return readFileSync(host.ranLog, 'utf8').split('\n').filter(Boolean);
}


export function currentOf(host: SelfHost): string | null {
  try {
    return readlinkSync(path.join(host.paths.appsDir, 'steward/current'));
  } catch {
    return null;
  }
}

// Waits until the helper answers status with its start over (recovering false), or throws.
export async function waitReady(host: SelfHost, child: ChildProcess, ms = 30_000): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the helper exited (${child.exitCode ?? child.signalCode}) before it got ready`);
    // Asked from this process (helper-status.ts), not by an agentctl process per poll.
    const status = await helperStatus(host.root);
    if (status?.recovering === false) return status;
    if (Date.now() > deadline) throw new Error('the helper did not get ready');
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

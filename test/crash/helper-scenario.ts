// Helper scenarios for the crash explorer: a host whose app is a cheap `sleep` (so that each
// crash state's recovery starts and probes a real process in milliseconds), set up by a normal
// helper, then one operation run by a helper under strace.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync, writeFileSync } from 'node:fs';
import type { TestContext } from 'node:test';
import path from 'node:path';
import { callHelper } from '../../src/protocol/client.js';
import { readAppState } from '../../src/helper/state/app-state.js';
import { ReceiptStore } from '../../src/helper/receipts/receipt-store.js';
import { loadOrCreateHelperKey } from '../../src/host/helper-key.js';
import { systemClock } from '../../src/platform/clock.js';
import { listVersionDirs } from '../../src/helper/release-store.js';
import { hostPaths, versionDir } from '../../src/core/paths.js';
import { buildCore } from '../../src/helper/build-core.js';
import { loadHostConfig } from '../../src/host/config.js';
import { systemAccounts } from '../../src/platform/users.js';
import { gzipTar, makeTar } from '../fixtures/tar-writer.js';
import { agentctl, BIN, makeHost, processApp, sri, startHelper, type CliResult, type TestHost } from '../helpers/host.js';
import { explore, killProcessesUnder, recordOps, snapshotRoot, spawnTraced, stateWorkDir, tracedPid, waitExit, type Exploration, type Recorded } from './explorer.js';
import { crashCap, crashSeed } from './settings.js';
import { checkRecoveredRoot, treeListing, type Before } from './invariants.js';
import { runHelperStart } from './run-start.js';

export const APP = 'web';

// A release of `web` whose process sleeps (healthy) or exits at once (unhealthy), with a few
// files and a folder, so that staging extracts a real tree.
// `health`: more of the manifest's health (its watch window, say).
export function sleepRelease(version: string, healthy = true, health: Record<string, unknown> = {}): Buffer {
  const release = {
    name: APP,
    version,
    start: { command: healthy ? ['/bin/sleep', '3600'] : ['/bin/false'] },
    health: { timeoutMs: 1000, stableMs: 30, ...health },
  };
  return gzipTar(
    makeTar([
      { path: 'steward-release.json', content: JSON.stringify(release) + '\n' },
      { path: 'lib/', type: 'dir', mode: 0o755 },
      { path: 'lib/app.txt', content: `web ${version}\n`.repeat(50) },
      { path: 'README', content: `release ${version}\n` },
    ]),
  );
}

// Writes the release into the host's scratch folder; the agentctl arguments that install it.
export function sleepReleaseArgs(host: TestHost, version: string, healthy = true, health: Record<string, unknown> = {}): string[] {
  const tgz = sleepRelease(version, healthy, health);
  const file = path.join(host.scratch, `${APP}-${version}${healthy ? '' : '-bad'}.tgz`);
  writeFileSync(file, tgz);
  return ['--file', file, '--integrity', sri(tgz), '--allow-unsigned'];
}

export function crashHost(): TestHost {
  return makeHost({ apps: { [APP]: processApp({ keepReleases: 2, stopTimeoutMs: 2000 }) } });
}

// Installs `versions` one after the other with a normal helper, then stops it and its apps.
export async function installVersions(host: TestHost, versions: string[], env: Record<string, string> = {}): Promise<void> {
  const helper = await startHelper(host, env);
  try {
    for (const v of versions) {
      const r = await agentctl(host, ['update', APP, v, ...sleepReleaseArgs(host, v), '--json']);
      if (r.json?.outcome !== 'active') throw new Error(`install ${v}: ${r.stdout} ${r.stderr}`);
    }
  } finally {
    await helper.stop();
    await killProcessesUnder(host.root);
  }
}

// Waits until a helper's start is over (status says recovering=false).
async function waitReady(host: TestHost, alive: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const s = (await callHelper(host.paths.adminSock, { v: 1, id: 1, op: 'status' }).catch(() => null)) as { recovering?: boolean } | null;
    if (s?.recovering === false) return;
    if (!alive()) throw new Error('the traced helper exited before it was ready');
    if (Date.now() > deadline) throw new Error('the traced helper did not get ready within 30 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Snapshots the root, starts a helper under strace, runs `act` against it, stops it, and
// returns the operations the helper made on the root.
export async function traceHelper(host: TestHost, act: (host: TestHost) => Promise<CliResult | void>): Promise<Recorded & { result: CliResult | void }> {
  const snapshot = await snapshotRoot(host.root);
  const traceFile = path.join(host.scratch, 'helper.strace');
  const strace = spawnTraced([process.execPath, BIN.helper, '--root', host.root], traceFile, { ...process.env, DEBUG: '' });
  let stderr = '';
  strace.stderr?.on('data', (c) => (stderr += c));
  try {
    await waitReady(host, () => strace.exitCode === null);
    const result = await act(host);
    process.kill(await tracedPid(strace), 'SIGTERM');
    // The apps outlive the helper and are traced too: strace ends with the last of them.
    await new Promise((r) => setTimeout(r, 200));
    await killProcessesUnder(host.root);
    await waitExit(strace);
    return { ...recordOps(traceFile, host.root, snapshot), result };
  } catch (err) {
    strace.kill('SIGKILL');
    await killProcessesUnder(host.root);
    throw new Error(`${(err as Error).message}\nstrace stderr: ${stderr}`);
  }
}

// What the root held before the run (from its snapshot on disk, read before the run) and the
// reference content of every release tree the run saw.
export async function beforeOf(host: TestHost): Promise<Before> {
  const state = await readAppState(host.paths, APP);
  const key = await loadOrCreateHelperKey(host.paths);
  const store = new ReceiptStore({ paths: host.paths, clock: systemClock, signer: { privateKey: key.privateKey, keyId: key.keyId }, nodeId: async () => null });
  const receiptSeqs = (await store.list(APP)).map((r) => r.payload.seq);
  return { app: APP, highestActive: state.highestActive, receiptSeqs, trees: await releaseTrees(host) };
}

// Adds the release trees present now (after the run) to `before.trees`.
export async function releaseTrees(host: TestHost, into = new Map<string, string[]>()): Promise<Map<string, string[]>> {
  for (const v of await listVersionDirs(host.paths, APP)) {
    if (!into.has(v)) into.set(v, await treeListing(versionDir(host.paths, APP, v)));
  }
  return into;
}

// The check of one crash state of a helper scenario: the helper's start, then the invariants.
export function helperCheck(before: Before): (root: string) => Promise<string[]> {
  return async (root) => {
    const started = await runHelperStart(root);
    try {
      return await checkRecoveredRoot(started, before);
    } finally {
      await started.close();
    }
  };
}

export interface HelperScenario {
  // Versions installed (untraced) before the run.
  installed: string[];
  // Anything else to do to the host before the snapshot (untraced).
  prepare?: (host: TestHost) => Promise<void>;
  // The traced operation against the traced helper; its result is checked by `expect`.
  act: (host: TestHost) => Promise<CliResult | void>;
  expect: (result: CliResult | void, host: TestHost) => Promise<void> | void;
}

export interface ScenarioRun {
  host: TestHost;
  before: Before;
  rec: Recorded;
  work: string;
  x: Exploration;
}

// Sets up a host, traces one helper operation on it and explores its crash states with the
// helper's start and the invariants; the host and the states' folder go when the test ends.
export async function exploreHelperScenario(t: TestContext, name: string, s: HelperScenario): Promise<ScenarioRun> {
  const host = crashHost();
  t.after(() => host.cleanup());
  if (s.installed.length) await installVersions(host, s.installed);
  await s.prepare?.(host);
  const before = await beforeOf(host);
  const rec = await traceHelper(host, s.act);
  await s.expect(rec.result, host);
  await releaseTrees(host, before.trees);
  const work = await stateWorkDir(host.scratch);
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const x = await explore(name, rec, work, helperCheck(before), { cap: crashCap(), seed: crashSeed() });
  return { host, before, rec, work, x };
}

// The same check with the real steward-helper binary doing the start: it runs with --root on
// the state until its status says the start is over, then is stopped; the invariants are then
// read from the disk (a block it kept only in memory is not seen here).
export function binaryCheck(before: Before): (root: string) => Promise<string[]> {
  return async (root) => {
    const child = spawn(process.execPath, [BIN.helper, '--root', root], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, DEBUG: '' } });
    let stderr = '';
    child.stderr?.on('data', (c) => (stderr += c));
    const paths = hostPaths(root);
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const s = (await callHelper(paths.adminSock, { v: 1, id: 1, op: 'status' }).catch(() => null)) as { recovering?: boolean } | null;
        if (s?.recovering === false) break;
        if (child.exitCode !== null) return [`steward-helper exited ${child.exitCode}: ${stderr}`];
        if (Date.now() > deadline) return ['steward-helper did not finish its start within 30 s'];
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    }
    const config = await loadHostConfig(paths.configFile, { isRoot: process.getuid?.() === 0, accounts: systemAccounts });
    const core = await buildCore(paths, config, process.getuid?.() === 0);
    try {
      return await checkRecoveredRoot({ paths, core, close: async () => {} }, before);
    } finally {
      await killProcessesUnder(root);
    }
  };
}

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, promises as fsp, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostConfigSchema } from '../../src/core/config-schema.js';
import { isTerminal, type Journal } from '../../src/core/journal-schema.js';
import { appDir, currentLink, hostPaths, stagingDir, type HostPaths } from '../../src/core/paths.js';
import { compareVersions } from '../../src/core/version.js';
import type { Clock } from '../../src/platform/clock.js';
import { faultsFromEnv, noFaults, type Faults } from '../../src/platform/faults.js';
import { generateKeyPair, keyIdOf, parsePrivateKey } from '../../src/platform/keys.js';
import { AppLocks } from '../../src/helper/app-locks.js';
import { ensureLayout } from '../../src/helper/layout.js';
import { ReceiptStore } from '../../src/helper/receipts/receipt-store.js';
import { listVersionDirs, readCurrent, readMarker } from '../../src/helper/release-store.js';
import { createProcessRunner } from '../../src/helper/runners/process-runner.js';
import { realStageIO } from '../../src/helper/stage/real-stage-io.js';
import { stageRelease } from '../../src/helper/stage/stage-release.js';
import { cleanStaleStaging } from '../../src/helper/start-cleanup.js';
import { readAppState } from '../../src/helper/state/app-state.js';
import { handleUpdate } from '../../src/helper/ops/update.js';
import { Attempts } from '../../src/helper/update/attempts.js';
import type { UpdateAnswer } from '../../src/protocol/schemas.js';
import type { UnitControl, UpdateContext } from '../../src/helper/update/context.js';
import { readJournal } from '../../src/helper/update/journal.js';
import { probeRelease } from '../../src/helper/update/probe.js';
import { recoverApp } from '../../src/helper/update/recover.js';
import { gzipTar, makeTar, type TarEntrySpec } from '../fixtures/tar-writer.js';
import { makeHost, sri, type TestHost } from './host.js';
import { AgentConfirms } from '../../src/helper/update/agent-confirm.js';

// An in-process host for fault tests: app `web` is a `unit` app whose "unit" is this very test
// process (alive, costs nothing to start or stop), so an activation is only its file-system
// transaction (journal, state, current, receipts) plus a probe on a clock that never sleeps.
// Versions named in `unhealthy` fail to start, to drive the rollback path.

export const CONFIG = { apps: { web: { runner: 'unit', unit: 'web.service', keepReleases: 5 } } };

// A clock whose sleeps return at once, moving the monotonic time on; `now` may be moved by a test.
export function instantClock(start = 1_800_000_000_000): Clock & { jump(ms: number): void } {
  let wall = start;
  let mono = 0;
  return {
    now: () => wall,
    monotonic: () => mono,
    sleep: async (ms, signal) => {
      signal?.throwIfAborted();
      mono += ms;
      wall += ms;
    },
    jump(ms) {
      wall += ms;
    },
  };
}

function fakeUnits(paths: HostPaths, unhealthy: Set<string>, hooks: { onStart?: () => void }): UnitControl {
  let running = false;
  return {
    async start() {
      hooks.onStart?.();
      const target = await fsp.readlink(currentLink(paths, 'web')).catch(() => '');
      running = !unhealthy.has(path.basename(target));
    },
    async stop() {
      running = false;
    },
    async status() {
      return running
        ? { activeState: 'active', subState: 'running', mainPid: process.pid, nRestarts: 0 }
        : { activeState: 'failed', subState: 'failed', mainPid: 0, nRestarts: 0 };
    },
  };
}

export interface FaultHost {
  host: TestHost;
  paths: HostPaths;
  unhealthy: Set<string>;
  // Called as the fake unit starts (after the swap, before the probe).
  onStart?: () => void;
  // A context as a helper would build it; `spec` arms the real seam (STEWARD_FAULTS) for it.
  context(spec?: string, clock?: Clock): UpdateContext & { fired: string[] };
  // Stages `version` from a fresh tarball (no faults unless the context has them), with
  // `extraBytes` of random bytes and `zeroBytes` of zeros (a tree far larger than its archive).
  // `opts.archiveInMemoryMaxBytes` as in StageDeps.
  stage(ctx: UpdateContext, version: string, extraBytes?: number, opts?: { zeroBytes?: number; archiveInMemoryMaxBytes?: number }): Promise<void>;
  // `update web <version> --attempt-id <attemptId>` over admin.sock, as the helper runs it
  // (refusals get their `refused` receipt); resolves with the answer or throws its error.
  update(ctx: UpdateContext, version: string, attemptId: string): Promise<UpdateAnswer>;
  // What the helper's start does for the app: recover the journal, clean staging.
  restart(): Promise<void>;
  cleanup(): void;
}

const key = parsePrivateKey(generateKeyPair().privatePem);

// A host with the layout and an armed-or-not context factory; the root is `root` when given
// (a tmpfs, say), else a fresh temp folder.
export async function makeFaultHost(root?: string, scratchDir?: string): Promise<FaultHost> {
  const host = root ? null : makeHost(CONFIG);
  const paths = root ? hostPaths(root) : (host as TestHost).paths;
  if (root) {
    await fsp.mkdir(path.dirname(paths.configFile), { recursive: true });
    writeFileSync(paths.configFile, JSON.stringify(CONFIG));
  }
  await ensureLayout(paths);
  const unhealthy = new Set<string>();
  const scratch = scratchDir ?? (host ? host.scratch : path.join(root as string, 'scratch'));
  await fsp.mkdir(scratch, { recursive: true });
  const config = hostConfigSchema.parse(CONFIG);
  const fh: FaultHost = {
    host: host ?? ({ root: root as string, paths, scratch, writeConfig() {}, cleanup() {} } as TestHost),
    paths,
    unhealthy,
    context(spec, clock = instantClock()) {
      const seam: Faults = spec ? faultsFromEnv({ STEWARD_FAULTS: spec }, paths.root) : noFaults;
      // The seam as it is, noting each I/O fault that fired, so a test knows its fault was reached.
      const fired: string[] = [];
      const faults: Faults = {
        hit: (p) => seam.hit(p),
        write: (p) => seam.write(p),
        io(point, op) {
          try {
            seam.io(point, op);
          } catch (err) {
            fired.push(`${op}:${point}`);
            throw err;
          }
        },
      };
      return {
        fired,
        paths,
        config,
        clock,
        io: realStageIO,
        runner: createProcessRunner({ clock, isRoot: false }),
        units: fakeUnits(paths, unhealthy, fh),
        receipts: new ReceiptStore({ paths, clock, signer: { privateKey: key, keyId: keyIdOf(key) }, nodeId: async () => null, faults }),
        faults,
        locks: new AppLocks(),
        probe: probeRelease,
        agentConfirms: new AgentConfirms(clock),
        runAs: async () => null,
        blockedInMemory: new Map(),
        stopTimeoutMs: 1000,
      };
    },
    async stage(ctx, version, extraBytes = 0, opts = {}) {
      const release = { name: 'web', version };
      const entries: TarEntrySpec[] = [{ path: 'steward-release.json', content: JSON.stringify(release) }];
      // Random bytes do not compress: the tarball and the tree are about extraBytes big.
      if (extraBytes) entries.push({ path: 'blob.bin', content: randomBytes(extraBytes) });
      if (opts.zeroBytes) entries.push({ path: 'zeros.bin', content: Buffer.alloc(opts.zeroBytes) });
      const tgz = gzipTar(makeTar(entries));
      const file = path.join(scratch, `web-${version}.tgz`);
      writeFileSync(file, tgz);
      const deps = opts.archiveInMemoryMaxBytes === undefined ? ctx : { ...ctx, archiveInMemoryMaxBytes: opts.archiveInMemoryMaxBytes };
      await stageRelease(deps, { kind: 'admin', app: 'web', version, path: file, integrity: sri(tgz), allowUnsigned: true });
    },
    async update(ctx, version, attemptId) {
      const file = path.join(scratch, `web-${version}.tgz`);
      const core = { ...ctx, attempts: new Attempts<UpdateAnswer>(), recovering: () => false };
      const req = { v: 1 as const, id: 1, op: 'update' as const, app: 'web', version, path: file, integrity: sri(readFileSync(file)), allowUnsigned: true, attemptId };
      const op = { kind: 'admin' as const, id: 1, progress: () => {}, upload: null, uploadSize: 0, closed: new AbortController().signal, peer: async () => ({ ok: false as const, why: 'a test without a socket' }) };
      return (await handleUpdate(core, req, op)) as UpdateAnswer;
    },
    async restart() {
      const ctx = fh.context();
      await recoverApp(ctx, 'web');
      await cleanStaleStaging(paths, 'web');
    },
    cleanup() {
      host?.cleanup();
    },
  };
  return fh;
}

// The invariants after a restart: `current` is a complete release with a valid marker,
// the journal is terminal and its attempt has exactly one receipt with the same outcome,
// nothing is left in .staging, every kept tree has its marker, no temp link is left, and the
// highest active version never went down. Returns the journal.
export async function assertHostSound(fh: FaultHost, want: { versions: string[]; highestAtLeast: string }): Promise<Journal> {
  const { paths } = fh;
  const cur = await readCurrent(paths, 'web');
  assert.equal(cur.state, 'valid', `current is a valid release: ${JSON.stringify(cur)}`);
  if (cur.state !== 'valid') throw new Error('unreachable');
  assert.ok(existsSync(path.join(paths.root, 'opt/steward/apps/web/current/steward-release.json')), 'current holds steward-release.json');
  const j = await readJournal(paths, 'web');
  assert.equal(j.state, 'ok', JSON.stringify(j));
  if (j.state !== 'ok') throw new Error('unreachable');
  assert.ok(isTerminal(j.journal.outcome), `the journal is terminal: ${j.journal.outcome}`);
  const receipts = await fh.context().receipts.find('web', j.journal.attemptId);
  assert.ok(receipts, `the terminal journal of ${j.journal.attemptId} has its receipt`);
  assert.equal(receipts.payload.outcome, j.journal.outcome, 'the receipt says what the journal says');
  if (j.journal.outcome === 'active') assert.equal(cur.version, j.journal.targetVersion, 'an active journal names current');
  else assert.equal(cur.version, j.journal.fromVersion, 'after a rollback current is the version before');
  assert.deepEqual(readdirSync(stagingDir(paths, 'web')), [], 'nothing is left in .staging');
  assert.deepEqual(readdirSync(appDir(paths, 'web')).filter((n) => n.startsWith('.current.')), [], 'no temp link is left');
  const kept = await listVersionDirs(paths, 'web');
  for (const v of kept) assert.ok(await readMarker(paths, 'web', v), `versions/${v} has a valid marker`);
  for (const v of want.versions) assert.ok(kept.includes(v), `versions/${v} is not lost: ${kept}`);
  const state = await readAppState(paths, 'web');
  assert.equal(state.blocked, null, `the app is not blocked after the restart: ${JSON.stringify(state.blocked)}`);
  assert.ok(state.highestActive !== null && compareVersions(state.highestActive, want.highestAtLeast) >= 0, `highestActive ${state.highestActive} >= ${want.highestAtLeast}`);
  return j.journal;
}

// A scratch folder on a tmpfs when root can mount one (fsync costs nothing there, so a few
// hundred transactions take seconds, not minutes, on a busy disk); else a plain temp folder.
export function fastScratch(sizeMb = 256): { dir: string; tmpfs: boolean; cleanup(): void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-faults-'));
  let tmpfs = false;
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0755`, 'tmpfs', dir], { stdio: 'ignore' });
    tmpfs = true;
  } catch {
    console.log('fault tests: no tmpfs (mounting one needs root); running on the temp folder, slower');
  }
  return {
    dir,
    tmpfs,
    cleanup() {
      // Lazily when busy: a write still in flight (a pass the test outran) must not fail the test.
      if (tmpfs) execFileSync('umount', ['--lazy', dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

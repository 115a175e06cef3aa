import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { hostConfigSchema } from '../../src/core/config-schema.js';
import { hostPaths } from '../../src/core/paths.js';
import type { Clock } from '../../src/platform/clock.js';
import { noFaults } from '../../src/platform/faults.js';
import { AppLocks } from '../../src/helper/app-locks.js';
import { ensureLayout } from '../../src/helper/layout.js';
import type { AppRunner } from '../../src/helper/runners/runner.js';
import { realStageIO } from '../../src/helper/stage/real-stage-io.js';
import { stageRelease } from '../../src/helper/stage/stage-release.js';
import type { UpdateContext } from '../../src/helper/update/context.js';
import { pointCurrent } from '../../src/helper/update/swap.js';
import { gzipTar, makeTar } from '../fixtures/tar-writer.js';
import { fastScratch } from './fault-host.js';
import { sri } from './host.js';
import { AgentConfirms } from '../../src/helper/update/agent-confirm.js';

// The supervisor tests' host (storm.test.ts, poll.test.ts): process apps with 1.0.0 staged and
// current, and an update context over a made-up runner and clock; no helper process.

export function releaseTgz(app: string, command: string[]): Buffer {
  return gzipTar(makeTar([{ path: 'steward-release.json', content: JSON.stringify({ name: app, version: '1.0.0', start: { command } }) }]));
}

// A host whose apps have 1.0.0 staged and current, and a context over `runner`.
export async function supervisedHost(apps: Record<string, Record<string, unknown>>, runner: AppRunner, clock: Clock, command = ['sleep', '30']) {
  const config = { apps: Object.fromEntries(Object.entries(apps).map(([a, extra]) => [a, { runner: 'process', ...extra }])) };
  // On a tmpfs when root: a storm is hundreds of fsynced record writes.
  const scratch = fastScratch(64);
  const paths = hostPaths(path.join(scratch.dir, 'root'));
  mkdirSync(path.dirname(paths.configFile), { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify(config));
  const host = { paths, scratch: scratch.dir, cleanup: () => scratch.cleanup() };
  await ensureLayout(host.paths);
  const ctx: UpdateContext = {
    paths: host.paths,
    config: hostConfigSchema.parse(config),
    clock,
    io: realStageIO,
    runner,
    units: { start: async () => {}, stop: async () => {}, status: async () => ({ activeState: 'inactive', subState: 'dead', mainPid: 0, nRestarts: 0 }) },
    receipts: { emit: async () => Promise.reject(new Error('no receipts here')), find: async () => null, checkRoom: async () => {} },
    faults: noFaults,
    locks: new AppLocks(),
    probe: async () => ({ ok: true }),
    agentConfirms: new AgentConfirms(clock),
    runAs: async () => null,
    blockedInMemory: new Map(),
    stopTimeoutMs: 1000,
  };
  for (const app of Object.keys(apps)) {
    const tgz = releaseTgz(app, command);
    const file = path.join(host.scratch, `${app}.tgz`);
    writeFileSync(file, tgz);
    await stageRelease(ctx, { kind: 'admin', app, version: '1.0.0', path: file, integrity: sri(tgz), allowUnsigned: true });
    await pointCurrent(host.paths, app, '1.0.0', noFaults, 'forward');
  }
  return { host, ctx };
}


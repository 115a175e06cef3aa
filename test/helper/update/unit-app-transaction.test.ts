import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { hostConfigSchema } from '../../../src/core/config-schema.js';
import { currentLink } from '../../../src/core/paths.js';
import { systemClock } from '../../../src/platform/clock.js';
import { noFaults } from '../../../src/platform/faults.js';
import { parsePrivateKey, generateKeyPair, keyIdOf } from '../../../src/platform/keys.js';
import { AppLocks } from '../../../src/helper/app-locks.js';
import { ensureLayout } from '../../../src/helper/layout.js';
import { ReceiptStore } from '../../../src/helper/receipts/receipt-store.js';
import { readCurrent } from '../../../src/helper/release-store.js';
import { createProcessRunner } from '../../../src/helper/runners/process-runner.js';
import { realStageIO } from '../../../src/helper/stage/real-stage-io.js';
import { stageRelease } from '../../../src/helper/stage/stage-release.js';
import { activate } from '../../../src/helper/update/activate.js';
import type { UnitControl, UpdateContext } from '../../../src/helper/update/context.js';
import { probeRelease } from '../../../src/helper/update/probe.js';
import { freePort, fetchVersion } from '../../fixtures/app-releases.js';
import { gzipTar, makeTar } from '../../fixtures/tar-writer.js';
import { makeHost, sri } from '../../helpers/host.js';
import { AgentConfirms } from '../../../src/helper/update/agent-confirm.js';

// A stand-in for systemd running `agent.service`, whose ExecStart runs server.js from the
// app's `current` (as the agent's real unit will): the helper only starts and stops it.
function fakeSystemd(current: string, port: number): UnitControl & { children: ChildProcess[] } {
  let child: ChildProcess | null = null;
  const children: ChildProcess[] = [];
  const alive = () => child !== null && child.exitCode === null && child.signalCode === null;
  return {
    children,
    async start() {
      if (alive()) return;
      child = spawn(process.execPath, ['server.js'], { cwd: current, env: { PORT: String(port) }, stdio: 'ignore' });
      children.push(child);
    },
    async stop() {
      if (!alive()) return;
      const c = child as ChildProcess;
      c.kill('SIGTERM');
      await new Promise((r) => c.once('exit', r));
    },
    async status() {
      return { activeState: alive() ? 'active' : 'inactive', subState: alive() ? 'running' : 'dead', mainPid: alive() ? (child?.pid ?? 0) : 0, nRestarts: 0 };
    },
  };
}

function unitRelease(version: string, port: number, healthy: boolean): Buffer {
  const server = `require('http').createServer((q, s) => { s.statusCode = q.url === '/healthz' && ${!healthy} ? 500 : 200; s.end('${version}\\n'); }).listen(Number(process.env.PORT), '127.0.0.1');`;
  const release = { name: 'agent', version, health: { http: `http://127.0.0.1:${port}/healthz`, timeoutMs: 2000, stableMs: 200 } };
  return gzipTar(makeTar([{ path: 'steward-release.json', content: JSON.stringify(release) }, { path: 'server.js', content: server }]));
}

test('a unit app is updated through the same transaction: its unit is stopped, current swapped, the unit started and probed, and rolled back on failure', async (t) => {
  const config = { apps: { agent: { runner: 'unit', unit: 'agent.service' } } };
  const host = makeHost(config);
  await ensureLayout(host.paths);
  const port = await freePort();
  const units = fakeSystemd(currentLink(host.paths, 'agent'), port);
  t.after(async () => {
    await units.stop('agent.service');
    host.cleanup();
  });
  const kp = generateKeyPair();
  const priv = parsePrivateKey(kp.privatePem);
  const ctx: UpdateContext = {
    paths: host.paths,
    config: hostConfigSchema.parse(config),
    clock: systemClock,
    io: realStageIO,
    runner: createProcessRunner({ clock: systemClock, isRoot: false }),
    units,
    receipts: new ReceiptStore({ paths: host.paths, clock: systemClock, signer: { privateKey: priv, keyId: keyIdOf(priv) }, nodeId: async () => null }),
    faults: noFaults,
    locks: new AppLocks(),
    probe: probeRelease,
    agentConfirms: new AgentConfirms(systemClock),
    runAs: async () => null,
    blockedInMemory: new Map(),
    stopTimeoutMs: 2000,
  };
  let from: string | null = null;
  const update = async (version: string, healthy: boolean) => {
    const tgz = unitRelease(version, port, healthy);
    const file = path.join(host.scratch, `agent-${version}.tgz`);
    writeFileSync(file, tgz);
    await stageRelease(ctx, { kind: 'admin', app: 'agent', version, path: file, integrity: sri(tgz), allowUnsigned: true });
    const r = await activate(ctx, { app: 'agent', attemptId: `t-${version}`, fromVersion: from, targetVersion: version, startedAt: Date.now(), progress: () => {} });
    if (r.journal.outcome === 'active') from = version;
    return r.journal;
  };

  assert.equal((await update('1.0.0', true)).outcome, 'active');
  assert.equal(await fetchVersion(port), '1.0.0');
  assert.equal((await update('2.0.0', true)).outcome, 'active');
  assert.equal(await fetchVersion(port), '2.0.0', 'the unit was restarted on the new current');
  const failed = await update('3.0.0', false);
  assert.equal(failed.outcome, 'rolled-back');
  assert.equal(failed.reason?.code, 'REPLACEMENT_UNHEALTHY');
  assert.deepEqual(await readCurrent(host.paths, 'agent'), { state: 'valid', version: '2.0.0' });
  assert.equal(await fetchVersion(port), '2.0.0', 'the unit runs the old version again');
  assert.equal(units.children.filter((c) => c.exitCode === null && c.signalCode === null).length, 1, 'one instance');
});

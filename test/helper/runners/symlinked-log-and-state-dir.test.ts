import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StewardError } from '../../../src/core/errors.js';
import { systemClock } from '../../../src/platform/clock.js';
import { lookupUser } from '../../../src/platform/users.js';
import { createProcessRunner } from '../../../src/helper/runners/process-runner.js';
import type { StartSpec } from '../../../src/helper/runners/runner.js';
import { IS_ROOT, REPO } from '../../helpers/host.js';

// Attack: a symlink planted at the app's log path or state folder, hoping the root helper
// appends to, or chowns, the file it points at.
const runner = createProcessRunner({ clock: systemClock, isRoot: IS_ROOT });

async function setup(t: { after(fn: () => void): void }) {
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-symlink-'));
  chmodSync(base, 0o755);
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const cwd = path.join(base, 'app');
  mkdirSync(cwd, { mode: 0o755 });
  mkdirSync(path.join(base, 'log'), { mode: 0o755 });
  mkdirSync(path.join(base, 'lib'), { mode: 0o755 });
  const runAs = IS_ROOT ? await lookupUser('nobody') : null;
  const spec: StartSpec = {
    app: 'web',
    version: '1.0.0',
    cwd,
    command: [process.execPath, path.join(REPO, 'test/fixtures/apps/crash.mjs')],
    env: {},
    runAs,
    logFile: path.join(base, 'log', 'web.log'),
    stateDir: path.join(base, 'lib', 'web'),
    instance: '0123456789abcdef0123456789abcdef',
  };
  return { base, spec };
}

async function refused(p: Promise<unknown>): Promise<void> {
  await assert.rejects(p, (err: unknown) => err instanceof StewardError && err.code === 'IO_ERROR');
}

test('a symlink at the log path is refused and its target is not written', async (t) => {
  const { base, spec } = await setup(t);
  const victim = path.join(base, 'victim');
  writeFileSync(victim, 'precious\n', { mode: 0o600 });
  symlinkSync(victim, spec.logFile);
  await refused(runner.start(spec));
  assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
});

test('a hard link at the log path is refused', async (t) => {
  const { base, spec } = await setup(t);
  const victim = path.join(base, 'victim');
  writeFileSync(victim, 'precious\n', { mode: 0o600 });
  linkSync(victim, spec.logFile);
  await refused(runner.start(spec));
  assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
});

test('a symlink at the state folder is refused and its target keeps its owner and mode', async (t) => {
  const { base, spec } = await setup(t);
  const victim = path.join(base, 'victim-dir');
  mkdirSync(victim, { mode: 0o700 });
  symlinkSync(victim, spec.stateDir);
  await refused(runner.start(spec));
  const st = statSync(victim);
  assert.equal(st.mode & 0o777, 0o700);
  assert.equal(st.uid, process.getuid?.());
});

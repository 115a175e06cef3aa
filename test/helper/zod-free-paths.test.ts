import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { callHelper } from '../../src/protocol/client.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, BIN, makeReleaseKey, manifestFor, processApp, sri } from '../helpers/host.js';
import { bundleOf, isClassicZod, moduleHook } from '../helpers/module-list.js';
import { gzipTar, makeTar } from '../fixtures/tar-writer.js';

// Classic zod is ~11 MB of a node process here, and a module once loaded stays: the helper's idle
// RSS was over issue 8's 60 MB (row 5) while it loaded it. What the helper reads and writes on
// its start, on the agent's status and receipts requests and on an update (a file, a signed
// manifest, a rollback) is checked by zod/mini schemas. Such a life must not load classic zod
// (startup-modules.test.ts holds the static graph). The helper runs its bundle: the files it
// loads are mapped back to the modules they hold by the bundle's metafile, and it may load no
// other file than its launcher and its bundle's.

const bundle = bundleOf('steward-helper');
// The modules held by the files a loader hook saw the helper load.
function sourcesLoaded(urls: string[]): string[] {
  const r = bundle.loaded(urls, [BIN.helper]);
  assert.deepEqual(r.outside, [], "the helper loads no file but its launcher and its bundle's");
  return r.sources;
}

function release(version: string, start: Record<string, unknown>, health: Record<string, unknown>): Buffer {
  return gzipTar(makeTar([{ path: 'steward-release.json', content: JSON.stringify({ name: 'web', version, start, health }) }]));
}

test('a helper that starts, updates from a file and from a signed manifest, rolls back and answers status and receipts loads no classic zod, nor does a refused request', async (t) => {
  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 2000 }) } });
  const hook = moduleHook();
  t.after(() => hook.cleanup());
  const key = makeReleaseKey(host, ['web']);
  const helper = await host.startHelper({ DEBUG: '' }, { nodeArgs: hook.args });
  const up = async (version: string, tgz: Buffer, signed: boolean) => {
    const file = path.join(host.scratch, `web-${version}.tgz`);
    writeFileSync(file, tgz);
    const how = signed ? ['--manifest', path.join(host.scratch, `web-${version}.manifest.json`)] : ['--integrity', sri(tgz), '--allow-unsigned'];
    if (signed) writeFileSync(how[1]!, JSON.stringify(key.sign(manifestFor('web', version, tgz))));
    return agentctl(host, ['update', 'web', version, '--file', file, ...how, '--json']);
  };
  const keepsRunning = { command: ['sleep', '300'] };
  const first = await up('1.0.0', release('1.0.0', keepsRunning, { stableMs: 0 }), false);
  assert.equal(first.json?.outcome, 'active', first.stdout + first.stderr);
  const signed = await up('1.1.0', release('1.1.0', keepsRunning, { stableMs: 0 }), true);
  assert.equal(signed.json?.outcome, 'active', signed.stdout + signed.stderr);
  // Exits at once: the probe fails, and the helper rolls back to 1.1.0 with a receipt saying why.
  const bad = await up('1.2.0', release('1.2.0', { command: ['sh', '-c', 'exit 3'] }, { stableMs: 2000 }), true);
  assert.equal(bad.json?.outcome, 'rolled-back', bad.stdout + bad.stderr);
  for (const args of [['status'], ['receipts', 'web'], ['releases', 'web']]) {
    const r = await agentctl(host, [...args, '--json']);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
  }
  assert.deepEqual(sourcesLoaded(hook.loaded(helper.stderr())).filter(isClassicZod), [], 'no classic zod module was loaded');

  // The hook sees modules loaded later too: a refused request is worded by its zod/mini schema.
  await assert.rejects(callHelper(host.paths.adminSock, { v: 1, id: 1, op: 'status', app: 'Not An App' }), (e: Error & { code?: string }) => {
    assert.equal(e.code, 'BAD_REQUEST');
    assert.match(e.message, /invalid status request: app: app names are/);
    return true;
  });
  assert.deepEqual(sourcesLoaded(hook.loaded(helper.stderr())).filter(isClassicZod), [], 'the refusal loaded no classic zod');
});

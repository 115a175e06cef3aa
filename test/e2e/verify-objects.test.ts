import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fsp } from 'node:fs';
import { objectsDir } from '../../src/core/paths.js';
import { listObjects } from '../../src/platform/object-store.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { freePort, releaseArgs } from '../fixtures/app-releases.js';

// docs/design.md §20 through the real helper and agentctl: `stage` says what it fetched and reused,
// `verify` passes on a sound host and exits 1 naming the object and the tree whose bytes changed.
const host = useHost(after, { apps: { web: processApp({ stopTimeoutMs: 1000, keepReleases: 3 }) } });
let port: number;

before(async () => {
  port = await freePort();
  await host.startHelper();
});

test('agentctl stage says what it fetched and reused, and agentctl verify names an object flipped on disk (exit 1)', { timeout: 60_000 }, async () => {
  const first = await agentctl(host, ['stage', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port), '--json']);
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.json.via, 'tarball');
  const second = await agentctl(host, ['stage', 'web', '1.1.0', ...releaseArgs(host.scratch, 'web', '1.1.0', port)]);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stdout, /fetched [\d.]+ (B|KiB|MiB) \(the tarball\), reused [\d.]+ (B|KiB|MiB) of files already on this host/);

  const sound = await agentctl(host, ['verify', '--json']);
  assert.equal(sound.code, 0, sound.stderr + sound.stdout);
  const web = (sound.json.apps as Array<{ app: string; trees: number; objects: number; problems: unknown[] }>).find((a) => a.app === 'web');
  assert.ok(web && web.trees === 2 && web.objects > 0 && web.problems.length === 0, JSON.stringify(sound.json));

  const { objects } = await listObjects(objectsDir(host.paths, 'web'));
  const victim = objects.find((o) => o.size > 0) as (typeof objects)[number];
  await fsp.chmod(victim.file, 0o644);
  const bytes = await fsp.readFile(victim.file);
  bytes[0] = (bytes[0] as number) ^ 1;
  await fsp.writeFile(victim.file, bytes);
  await fsp.chmod(victim.file, victim.name.endsWith('-x') ? 0o555 : 0o444);

  const changed = await agentctl(host, ['verify', 'web']);
  assert.equal(changed.code, 1, changed.stderr + changed.stdout);
  assert.match(changed.stdout, new RegExp(`object ${victim.name} holds bytes whose sha256 is not its name`));
  assert.match(changed.stdout, /tree web 1\.[01]\.0 its files are not the ones staged/);
  const json = await agentctl(host, ['verify', 'web', '--json']);
  assert.equal(json.code, 1);
  assert.ok((json.json.apps[0].problems as Array<{ kind: string; name: string }>).some((p) => p.kind === 'object' && p.name === victim.name));
});

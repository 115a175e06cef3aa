import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LAUNCHER, LauncherHost, shellParses, writeMarker, wrongLauncher } from '../helpers/launcher-host.js';

// The attack: a pointer in self/ (candidate, or `current` of the app steward) whose "version"
// climbs out of versions/ to a tree the attacker placed, so that root's unit runs its code. The
// launcher checks every version against steward's pattern (docs/design.md §1) before building a path
// from it; a version that is not one is garbage, and garbage is never run.

// Versions that lead out of versions/ (or would, if joined into a path unchecked).
const EVIL = ['../../../../../evil/1.0.0', '..', '1.0.0/../../../../../../evil/1.0.0', '1.0.0 ', '-rf', '$(id)'];

function attackHost(dir: string, n: number, evil: string): LauncherHost {
  const host = new LauncherHost(path.join(dir, String(n)), '0.9.0');
  host.addRelease('1.0.0', 'good');
  // A whole-looking tree where the versions above lead, its marker naming the version used.
  const trap = path.join(host.base, 'root/evil/1.0.0');
  mkdirSync(path.join(trap, 'bin'), { recursive: true });
  writeFileSync(path.join(trap, 'bin/steward-helper.js'), 'evil');
  writeFileSync(path.join(trap, 'behaviour'), 'good');
  writeMarker(trap, evil);
  return host;
}

async function outsideTreesNeverRun(t: TestContext, launcher: string): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-self-attack-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  for (const evil of EVIL) {
    for (const where of ['candidate', 'package candidate', 'current']) {
      const host = attackHost(dir, n++, evil);
      if (where === 'current') symlinkSync(`versions/${evil}`, path.join(host.appDir, 'current'));
      else {
        host.setCurrent('1.0.0');
        const line = JSON.stringify({ schemaVersion: 1, version: evil, source: where === 'candidate' ? 'release' : 'package' });
        host.writeSelf('candidate', `${line}\n`);
      }
      await host.starts(3, { launcher });
      for (const run of host.runs()) {
        assert.ok(run.tree === 'package' || run.tree === 'versions/1.0.0', `${where} naming ${JSON.stringify(evil)} ran ${run.tree}`);
      }
      assert.ok(host.runs().length === 3, `${where} naming ${JSON.stringify(evil)}: every start booted`);
    }
  }
}

test('a candidate or current whose version leads out of versions/ never runs, and the floor or current boots', (t) => outsideTreesNeverRun(t, LAUNCHER));

test('a launcher that builds paths from unchecked versions is caught', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-self-attack-wrong-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const launcher = wrongLauncher(dir, 'unchecked-versions', [
    [/is_version\(\) \{\n/, 'is_version() {\n  return 0\n'],
  ]);
  assert.ok(shellParses(launcher));
  await assert.rejects(outsideTreesNeverRun(t, launcher), assert.AssertionError);
});

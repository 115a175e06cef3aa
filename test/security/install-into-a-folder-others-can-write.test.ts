import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeIfChanged } from '../../src/install/root-files.js';
import { StewardError } from '../../src/core/errors.js';
import { IS_ROOT } from '../helpers/host.js';

// The attack: a unit, config or tmpfiles.d file written by root into a folder someone else can
// write could be swapped (or pre-planted as a symlink) between the check and the write. Install
// refuses such a folder outright, and replaces a planted symlink instead of writing through it.

test('install refuses to write into a group- or other-writable folder', { skip: IS_ROOT ? false : 'the root-owned check needs root' }, async (t) => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-rootfiles-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  chmodSync(base, 0o755);
  for (const mode of [0o775, 0o757, 0o777]) {
    const dir = path.join(base, `d${mode.toString(8)}`);
    mkdirSync(dir);
    chmodSync(dir, mode);
    await assert.rejects(writeIfChanged(path.join(dir, 'steward.conf'), Buffer.from('x\n'), 0o644), (err: unknown) => {
      assert.ok(err instanceof StewardError);
      assert.equal(err.code, 'ROOT_UNSAFE');
      assert.match(err.message, new RegExp(dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
      return true;
    });
    assert.equal(existsSync(path.join(dir, 'steward.conf')), false, `nothing written into a ${mode.toString(8)} folder`);
  }
});

test('a symlink planted at the target is replaced, not written through', { skip: IS_ROOT ? false : 'needs root' }, async (t) => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-rootfiles-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  chmodSync(base, 0o755);
  const victim = path.join(base, 'victim');
  writeFileSync(victim, 'precious\n');
  const dir = path.join(base, 'etc');
  mkdirSync(dir, { mode: 0o755 });
  symlinkSync(victim, path.join(dir, 'steward.conf'));
  assert.equal(await writeIfChanged(path.join(dir, 'steward.conf'), Buffer.from('conf\n'), 0o644), 'updated');
  assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
  assert.ok(lstatSync(path.join(dir, 'steward.conf')).isFile());
  assert.equal(readFileSync(path.join(dir, 'steward.conf'), 'utf8'), 'conf\n');
});

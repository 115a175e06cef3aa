import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveRootPrefix } from '../../src/platform/root-prefix.js';

const asRoot = { skip: process.getuid?.() !== 0 ? 'needs root (runs in CI as root)' : false };

function tmp(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'steward-prefix-'));
  chmodSync(d, 0o755);
  return d;
}

test('without --root or STEWARD_ROOT the prefix is empty (production)', async () => {
  assert.equal(await resolveRootPrefix({ isRoot: false }), '');
  assert.equal(await resolveRootPrefix({ isRoot: true }), '');
});

test('STEWARD_ROOT is honoured for a non-root caller and ignored for root', async () => {
  const d = tmp();
  try {
    assert.equal(await resolveRootPrefix({ env: d, isRoot: false }), d);
    assert.equal(await resolveRootPrefix({ env: d, isRoot: true }), '');
  } finally {
    rmSync(d, { recursive: true });
  }
});

test('the prefix is resolved to its real path', async () => {
  const d = tmp();
  try {
    mkdirSync(path.join(d, 'real'), { mode: 0o755 });
    symlinkSync('real', path.join(d, 'link'));
    assert.equal(await resolveRootPrefix({ flag: path.join(d, 'link'), isRoot: false }), path.join(d, 'real'));
  } finally {
    rmSync(d, { recursive: true });
  }
});

test('a missing prefix is refused with ROOT_UNSAFE', async () => {
  await assert.rejects(resolveRootPrefix({ flag: '/nonexistent/steward-root', isRoot: false }), { code: 'ROOT_UNSAFE' });
});

test('as root, a prefix writable by others, or under a folder another user owns, is refused', asRoot, async () => {
  const d = tmp();
  try {
    const open = path.join(d, 'open');
    mkdirSync(open, { mode: 0o755 });
    chmodSync(open, 0o777);
    await assert.rejects(resolveRootPrefix({ flag: open, isRoot: true }), /writable by group or others/);
    const sticky = path.join(d, 'sticky');
    mkdirSync(sticky);
    chmodSync(sticky, 0o1777);
    await assert.rejects(resolveRootPrefix({ flag: sticky, isRoot: true }), /writable by group or others/, 'the prefix itself may not be sticky-open');
    const inside = path.join(sticky, 'root');
    mkdirSync(inside, { mode: 0o755 });
    assert.equal(await resolveRootPrefix({ flag: inside, isRoot: true }), inside, 'a sticky folder above is fine');
    const owned = path.join(d, 'owned');
    mkdirSync(path.join(owned, 'root'), { recursive: true, mode: 0o755 });
    chownSync(owned, 65534, 65534);
    await assert.rejects(resolveRootPrefix({ flag: path.join(owned, 'root'), isRoot: true }), /owned by uid 65534/);
  } finally {
    rmSync(d, { recursive: true });
  }
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mulberry32 } from '../helpers/prng.js';
import { analyzeOps, closure, droppable, generateCrashStates } from './crash-states.js';
import { materialize } from './explorer.js';
import { FsModel, ROOT_INO, type FsOp } from './fs-model.js';
import { parseStrace } from './strace-parse.js';
import { traceToOps } from './trace-to-ops.js';

// A root with folder `d` holding `t` = "old".
function base(): FsModel {
  const m = new FsModel();
  const d = m.allocIno();
  m.apply({ k: 'mkdir', parent: ROOT_INO, name: 'd', ino: d, mode: 0o755, uid: 0, gid: 0, path: 'd', line: 0 });
  const t = m.allocIno();
  m.apply({ k: 'creat', parent: d, name: 't', ino: t, mode: 0o600, uid: 0, gid: 0, path: 'd/t', line: 0 });
  m.apply({ k: 'write', ino: t, off: 0, data: Buffer.from('old'), path: 'd/t', line: 0 });
  return m;
}

// The atomic file replace of d/t with "new", as strace shows it, optionally without the file fsync.
function replaceTrace(fileFsync: boolean): string {
  return [
    '1  openat(AT_FDCWD</>, "/R/d/.t.1.tmp", O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600) = 18</R/d/.t.1.tmp>',
    '1  fchmod(18</R/d/.t.1.tmp>, 0600) = 0',
    '1  write(18</R/d/.t.1.tmp>, "new", 3) = 3',
    ...(fileFsync ? ['1  fsync(18</R/d/.t.1.tmp>) = 0'] : []),
    '1  rename("/R/d/.t.1.tmp", "/R/d/t") = 0',
    '1  openat(AT_FDCWD</>, "/R/d", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = 19</R/d>',
    '1  fsync(19</R/d>) = 0',
    '1  write(20</R/run/x>, "tmpfs", 5) = 5',
    '1  write(21</elsewhere/y>, "outside", 7) = 7',
  ].join('\n');
}

function opsOf(text: string, m: FsModel): FsOp[] {
  return traceToOps(parseStrace(text), m, { root: '/R', skip: (r) => r.startsWith('run/') || r === 'run' });
}

// What d/t holds in every state a cut after `crashAt` operations can leave (every subset of
// the droppable operations, closed under what needs them).
function contentsAt(m: FsModel, ops: FsOp[], crashAt: number): Set<string> {
  const g = analyzeOps(ops);
  const d = droppable(ops, g, crashAt);
  const out = new Set<string>();
  for (let mask = 0; mask < 1 << d.length; mask++) {
    const lost = closure(g, crashAt, d.filter((_, i) => mask & (1 << i)));
    const after = materialize(m, ops, { crashAt, lost, kind: 'drop-many' });
    const ino = after.lookup('d/t');
    const n = ino === null ? null : after.get(ino);
    out.add(n?.type === 'file' ? n.data.toString('latin1') : 'missing');
  }
  return out;
}

test('the trace of an atomic replace becomes its operations on the root, outside and tmpfs left out', () => {
  const ops = opsOf(replaceTrace(true), base());
  assert.deepEqual(ops.map((o) => `${o.k} ${o.path}`), ['creat d/.t.1.tmp', 'chmod d/.t.1.tmp', 'write d/.t.1.tmp', 'fsync d/.t.1.tmp', 'rename d/.t.1.tmp -> d/t', 'fsync d']);
});

test('with the file fsync, a cut leaves the old or the new content, never a torn file', () => {
  const m = base();
  const ops = opsOf(replaceTrace(true), m);
  for (let k = 0; k <= ops.length; k++) {
    for (const c of contentsAt(m, ops, k)) assert.ok(c === 'old' || c === 'new', `cut after ${k}: d/t holds ${JSON.stringify(c)}`);
  }
  assert.deepEqual(contentsAt(m, ops, ops.length), new Set(['new']), 'after the folder fsync only the new content');
  assert.deepEqual(contentsAt(m, ops, 4), new Set(['old']), 'before the rename only the old one');
  assert.ok(contentsAt(m, ops, 5).has('new') && contentsAt(m, ops, 5).has('old'), 'an un-fsynced rename may be lost or kept');
});

test("without the file fsync, the rename can survive while the file's data is lost", () => {
  const m = base();
  const ops = opsOf(replaceTrace(false), m);
  assert.ok(contentsAt(m, ops, ops.length).has(''), 'an empty d/t after the folder fsync');
});

test("fsync of a new file does not make its name durable; the rename needs the created name", () => {
  const m = base();
  const ops = opsOf(replaceTrace(true), m);
  const g = analyzeOps(ops);
  // Cut after the file fsync: its creat may still be lost (the folder was not fsynced).
  assert.deepEqual(droppable(ops, g, 4), [0]);
  // After the rename, losing the creat loses the rename with it.
  assert.deepEqual(closure(g, 5, [0]), [0, 4]);
  // After the folder fsync nothing of it can be lost.
  assert.deepEqual(droppable(ops, g, ops.length), []);
});

test('syncfs makes everything before it durable', () => {
  const m = base();
  const ops = opsOf(replaceTrace(false) + '\n1  syncfs(3</R/d>) = 0', m);
  assert.deepEqual(droppable(ops, analyzeOps(ops), ops.length), []);
});

test('the states are capped and the sample is the same for the same seed', () => {
  const m = base();
  const ops = opsOf(replaceTrace(false), m);
  const a = generateCrashStates(ops, { cap: 4, seed: 3, rng: mulberry32(3) });
  const b = generateCrashStates(ops, { cap: 4, seed: 3, rng: mulberry32(3) });
  assert.equal(a.states.length, 4);
  assert.ok(a.enumerated > 4);
  assert.deepEqual(a.states, b.states);
});

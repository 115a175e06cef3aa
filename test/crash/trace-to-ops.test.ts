import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FsModel, ROOT_INO } from './fs-model.js';
import { parseStrace } from './strace-parse.js';
import { traceToOps } from './trace-to-ops.js';

const opts = { root: '/R', skip: (r: string) => r === 'run' || r.startsWith('run/') };

function modelWithDir(): FsModel {
  const m = new FsModel();
  m.apply({ k: 'mkdir', parent: ROOT_INO, name: 'd', ino: m.allocIno(), mode: 0o755, uid: 0, gid: 0, path: 'd', line: 0 });
  return m;
}

test('the *at calls resolve their paths against the folder fd; writev, pwrite and truncate land at their offsets', () => {
  const m = modelWithDir();
  const text = [
    '1  mkdirat(AT_FDCWD</R>, "d/sub", 0700) = 0',
    '1  openat(5</R/d>, "sub/f", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 7</R/d/sub/f>',
    '1  writev(7</R/d/sub/f>, [{iov_base="ab", iov_len=2}, {iov_base="cd\\n", iov_len=3}], 2) = 5',
    '1  pwrite64(7</R/d/sub/f>, "XY", 2, 1) = 2',
    '1  ftruncate(7</R/d/sub/f>, 4) = 0',
    '1  symlinkat("sub/f", 5</R/d>, ".l.tmp") = 0',
    '1  renameat2(AT_FDCWD</R>, "d/.l.tmp", AT_FDCWD</R>, "d/l", RENAME_NOREPLACE) = 0',
    '1  unlinkat(AT_FDCWD</R>, "d/l", 0) = 0',
    '1  openat(AT_FDCWD</>, "/R/run/lock", O_WRONLY|O_CREAT, 0600) = 9</R/run/lock>',
  ].join('\n');
  const ops = traceToOps(parseStrace(text), m, opts);
  assert.deepEqual(
    ops.map((o) => `${o.k} ${o.path}`),
    ['mkdir d/sub', 'creat d/sub/f', 'write d/sub/f', 'write d/sub/f', 'trunc d/sub/f', 'symlink d/.l.tmp', 'rename d/.l.tmp -> d/l', 'unlink d/l'],
  );
  const after = m.clone();
  for (const op of ops) after.apply(op);
  const f = after.get(after.lookup('d/sub/f') as number);
  assert.equal(f.type === 'file' && f.data.toString(), 'aXYd');
  assert.equal(f.type === 'file' && f.mode, 0o644);
  assert.equal(after.lookup('d/l'), null);
});

test('bytes strace cannot show inside the root are refused, not silently missed', () => {
  const m = modelWithDir();
  const text = [
    '1  openat(AT_FDCWD</>, "/R/d/f", O_WRONLY|O_CREAT, 0600) = 7</R/d/f>',
    '1  copy_file_range(3</src>, NULL, 7</R/d/f>, NULL, 100, 0) = 100',
  ].join('\n');
  assert.throws(() => traceToOps(parseStrace(text), m, opts), /copy_file_range inside the root is not modelled/);
  const cut = '1  openat(AT_FDCWD</>, "/R/d/g", O_WRONLY|O_CREAT, 0600) = 7</R/d/g>\n1  write(7</R/d/g>, "ab"..., 5) = 5';
  assert.throws(() => traceToOps(parseStrace(cut), m, opts), /cut the written bytes short/);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseStrace, unescapeC } from './strace-parse.js';

test('a call split by <unfinished ...> is one event, placed where it resumed', () => {
  const text = [
    '10  fsync(18</r/j> <unfinished ...>',
    '11  rename("/r/.a.tmp", "/r/a") = 0',
    '10  <... fsync resumed>)              = 0',
  ].join('\n');
  const evs = parseStrace(text);
  assert.deepEqual(evs.map((e) => e.name), ['rename', 'fsync']);
  assert.deepEqual(evs[1]!.args, [{ kind: 'fd', fd: 18, path: '/r/j' }]);
  assert.equal(evs[1]!.line, 3);
});

test('strings, fds with paths, flags and results are parsed; failed calls keep their -1', () => {
  const text = [
    '4154  openat(AT_FDCWD</tmp/st>, "/r/.a.tmp", O_WRONLY|O_CREAT|O_EXCL, 0600) = 18</r/.a.tmp>',
    '4156  write(18</r/.a.tmp>, "hello \\"x\\"\\n\\303\\251, a", 15) = 15',
    '4157  unlink("/r/gone") = -1 ENOENT (No such file or directory)',
    '4158  --- SIGCHLD {si_signo=SIGCHLD} ---',
    '4158  +++ exited with 0 +++',
  ].join('\n');
  const [open, write, unlink, ...rest] = parseStrace(text);
  assert.equal(rest.length, 0, 'signals and exits are not calls');
  assert.deepEqual(open!.args[0], { kind: 'fd', fd: -100, path: '/tmp/st' });
  assert.deepEqual(open!.args[2], { kind: 'raw', text: 'O_WRONLY|O_CREAT|O_EXCL' });
  assert.equal(open!.ret, 18);
  assert.equal(open!.retPath, '/r/.a.tmp');
  assert.equal(write!.args[1]!.kind === 'str' && write!.args[1]!.value.toString('utf8'), 'hello "x"\né, a');
  assert.equal(unlink!.ret, -1);
});

test('C escapes decode to the exact bytes', () => {
  assert.deepEqual([...unescapeC('\\0\\x41\\101\\t\\\\')], [0, 0x41, 0x41, 9, 0x5c]);
  assert.deepEqual([...unescapeC('\\3777')], [0xff, 0x37]);
});

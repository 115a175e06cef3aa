import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isLimitApplied, parseKernelOomKill, readAppliedMemoryLimit, readLimitOf } from '../../../src/helper/runners/unit-memory-limit.js';

// Under systemd the runner reads the unit's memory limit back from its process's cgroup
// (unit-memory-limit.ts): systemd starts a unit whose MemoryMax= it cannot apply without one.
// These build a cgroup tree for this very process's /proc/self/cgroup lines in a scratch root.

const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n').filter(Boolean);
const memoryLine = lines.find((l) => l.split(':')[1]?.split(',').includes('memory'));
const v2Line = lines.find((l) => l.startsWith('0::'));

function scratchRoot(t: { after(fn: () => void): void }): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'steward-cgroup-root-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

test('a v1 memory controller: the limit is memory.limit_in_bytes of the process\'s memory cgroup', (t) => {
  if (!memoryLine) return t.skip('this process is in no v1 memory cgroup (a pure cgroup v2 host)');
  const root = scratchRoot(t);
  const dir = path.join(root, 'memory', memoryLine.split(':').slice(2).join(':'));
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'memory.limit_in_bytes'), '536866816\n');
  assert.equal(readAppliedMemoryLimit(process.pid, root), 536866816);
});

test('cgroup v2: the limit is memory.max of the process\'s cgroup, "max" being none', (t) => {
  const root = scratchRoot(t);
  const text = '0::/system.slice/steward-app-web.service\n';
  const dir = path.join(root, 'system.slice/steward-app-web.service');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'memory.max'), '67108864\n');
  assert.equal(readLimitOf(text, root), 64 * 1024 * 1024);
  writeFileSync(path.join(dir, 'memory.max'), 'max\n');
  assert.equal(readLimitOf(text, root), Number.POSITIVE_INFINITY);
  // A hybrid host: the v1 memory controller's line comes first; a path outside the namespace is none.
  const v1 = path.join(root, 'memory/system.slice/steward-app-web.service');
  mkdirSync(v1, { recursive: true });
  writeFileSync(path.join(v1, 'memory.limit_in_bytes'), '1048576\n');
  assert.equal(readLimitOf('4:memory:/system.slice/steward-app-web.service\n' + text, root), 1024 * 1024);
  assert.equal(readLimitOf('0::/../../system.slice/steward-app-web.service\n', root), null);
});

test('no memory controller, or a process that is gone, reads as no limit', (t) => {
  const root = scratchRoot(t);
  assert.equal(readAppliedMemoryLimit(process.pid, root), null);
  assert.equal(readAppliedMemoryLimit(2 ** 22 + 12345, root), null);
});

test('a limit read back counts as applied when it is the one asked for, in whole pages', () => {
  assert.equal(isLimitApplied(512 * 1024 * 1024, 512 * 1024 * 1024), true);
  assert.equal(isLimitApplied(2_998_272, 3_000_000), true, 'rounded down to 4 KiB pages');
  assert.equal(isLimitApplied(null, 3_000_000), false);
  assert.equal(isLimitApplied(Number.POSITIVE_INFINITY, 3_000_000), false);
  assert.equal(isLimitApplied(9223372036854771712, 3_000_000), false, "v1's unlimited");
  assert.equal(isLimitApplied(256 * 1024 * 1024, 512 * 1024 * 1024), false, 'another limit');
});

test("the kernel's log names an OOM kill of a pid: a cgroup's limit or the whole host's memory, and only that pid", () => {
  // As this kernel (6.18) logged the kill of a memory hog under a 128M limit.
  const log = [
    'node invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0',
    'oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/system.slice/steward-app-web.service,task_memcg=/system.slice/steward-app-web.service,task=node,pid=31764,uid=65534',
    'Memory cgroup out of memory: Killed process 31764 (node) total-vm:1118684kB, anon-rss:129964kB, file-rss:35256kB, shmem-rss:0kB, UID:65534 pgtables:748kB oom_score_adj:0',
    '',
  ].join('\n');
  assert.equal(parseKernelOomKill(log, 31764), true);
  assert.equal(parseKernelOomKill(log, 3176), false, 'another pid');
  assert.equal(parseKernelOomKill(log, 317640), false, 'another pid');
  assert.equal(parseKernelOomKill('Out of memory: Killed process 812 (node) total-vm:1kB\n', 812), true, 'the whole host out of memory');
  assert.equal(parseKernelOomKill('some line Memory cgroup out of memory: Killed process 812 (node)\n', 812), false, 'only a whole line of the form');
  assert.equal(parseKernelOomKill('', 812), false);
});

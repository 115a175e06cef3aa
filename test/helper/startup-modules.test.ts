import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from '../helpers/host.js';
import { isClassicZod, isZodMini, modulesResolvedBy } from '../helpers/module-list.js';

// An idle helper's RSS is mostly what it loaded (issue 8 row 5): execa alone was ~100 modules and
// ~10 MB, classic zod ~11 MB, and a module once loaded stays. The helper's start must load
// neither, and no path of the helper may load execa at all: `sync -f` after a stage, systemctl
// and journalctl run through node:child_process (platform/exec.ts). Its shapes are zod/mini
// schemas (DESIGN §15; test/helper/zod-free-paths.test.ts follows a helper's life with a loader
// hook).
test("the helper's modules do not include execa", () => {
  const main = path.join(REPO, 'dist/src/helper/main.js');
  const { modules, stderr } = modulesResolvedBy(['--input-type=module', '-e', `await import(${JSON.stringify(main)})`]);
  assert.ok(modules.some((u) => u.endsWith('/helper/main.js')), `the hook saw the helper load:\n${stderr}`);
  assert.deepEqual(modules.filter((u) => u.includes('/node_modules/execa/')), []);
});

test("the helper's modules include zod/mini and no classic zod", () => {
  const main = path.join(REPO, 'dist/src/helper/main.js');
  const { modules, stderr } = modulesResolvedBy(['--input-type=module', '-e', `await import(${JSON.stringify(main)})`]);
  assert.ok(modules.some((u) => u.endsWith('/helper/main.js')), `the hook saw the helper load:\n${stderr}`);
  assert.ok(modules.some(isZodMini), 'the hook saw zod/mini load');
  assert.deepEqual(modules.filter(isClassicZod), []);
});

// Every specifier of a built module: static imports and re-exports, and `import('...')`.
function specifiersOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)'([^']+)'/gm)].map((m) => m[1] as string);
}

test('no path of the helper, however rare, imports execa or classic zod', () => {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const zodEntries = new Set<string>();
  const stack = [path.join(REPO, 'dist/src/helper/main.js'), path.join(REPO, 'dist/src/platform/tarball-worker.js')];
  while (stack.length) {
    const file = stack.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of specifiersOf(file)) {
      if (spec.startsWith('.')) stack.push(path.resolve(path.dirname(file), spec));
      else if (!spec.startsWith('node:')) packages.add(spec.split('/')[0] as string);
      if (spec === 'zod' || spec.startsWith('zod/')) zodEntries.add(spec);
    }
  }
  assert.ok(seen.size > 100 && packages.has('zod'), `the walk reached the helper's modules (${seen.size}) and zod`);
  assert.ok(!packages.has('execa'), `packages reached: ${[...packages].sort().join(', ')}`);
  // zod/mini, and zod's English messages for it (core/zod-mini.ts); never `zod` or `zod/v4`.
  assert.deepEqual([...zodEntries].sort(), ['zod/mini', 'zod/v4/locales/en.js']);
});

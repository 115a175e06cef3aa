import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { PROGRAMS } from '../../scripts/bundle.js';
import { REPO } from '../helpers/host.js';
import { bundleOf } from '../helpers/module-list.js';

// Every schema imports zod/mini through src/core/zod-mini.ts as a namespace (`import * as z`):
// esbuild then bundles only the members read by name. zod's own `z` (`import { z } from
// 'zod/mini'`) is a namespace object used as a value, which kept all of zod/mini and zod/v4/core
// in every program, about 250 KB of the bundle where 50 KB are used, evaluated at each start: 30
// to 40 ms of CPU for each steward-control run that loads an operation, on a busy 2-core machine.

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(path.join(REPO, dir)).sort()) {
    const rel = path.posix.join(dir, name);
    if (statSync(path.join(REPO, rel)).isDirectory()) sources(rel, out);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

test("every module imports zod as core/zod-mini.ts's namespace, none zod itself", () => {
  const wrong: string[] = [];
  for (const file of sources('src')) {
    if (file === 'src/core/zod-mini.ts' || file.startsWith('src/ui/')) continue;
    for (const [i, line] of readFileSync(path.join(REPO, file), 'utf8').split('\n').entries()) {
      const zod = /^\s*(?:import|export)\b.*from '(zod(?:\/[^']*)?|[^']*\/zod-mini\.js)';/.exec(line);
      if (!zod) continue;
      if (zod[1]!.startsWith('zod') || !/^import (?:type )?\* as z from /.test(line)) wrong.push(`${file}:${i + 1}: ${line.trim()}`);
    }
  }
  assert.deepEqual(wrong, [], "import zod as `import * as z from '.../core/zod-mini.js'`");
});

test("no program's bundle holds zod's JSON Schema converters or its code generator", () => {
  for (const p of PROGRAMS) {
    const zod = bundleOf(p.name).sources().filter((s) => s.includes('/node_modules/zod/'));
    assert.ok(zod.some((s) => s.endsWith('/zod/v4/mini/schemas.js')), `${p.name} bundles zod/mini`);
    const unused = zod.filter((s) => /\/zod\/v4\/core\/(?:json-schema-processors|to-json-schema|json-schema-generator|compile)\.js$/.test(s));
    assert.deepEqual(unused, [], `${p.name} bundles all of zod: is a namespace of zod used as a value?`);
  }
});

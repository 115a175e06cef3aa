// An older commit of steward, compiled for the tests that run it (the compatibility fleet, the
// agent release from before the bundle), as tsc would lay it out (outDir dist, rootDir the
// checkout) but by esbuild, file for file, without a type check: the commit was type-checked
// when it landed, and tsc took 15-33 s of CPU per run to say so again (esbuild: under 1 s).
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

// Transpiles every .ts file under `tree`'s `folders` to `tree`/dist/<folder>/...js.
export async function transpileTree(tree: string, folders: string[]): Promise<void> {
  const sources = folders.flatMap((f) => typeScriptFiles(path.join(tree, f)));
  await build({ entryPoints: sources, outdir: path.join(tree, 'dist'), outbase: tree, bundle: false, format: 'esm', platform: 'node', target: 'es2022', logLevel: 'error' });
}

function typeScriptFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) typeScriptFiles(p, out);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

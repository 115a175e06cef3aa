import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

// The bench's own app tree: several thousand small files (a node_modules-like tree of source
// text, which compresses like real code) and a few large files of random bytes (which do not
// compress, so the tarball's size is real). Tarred by GNU tar, one tarball per version because
// steward-release.json names the version.

export interface AppTree {
  dir: string;
  files: number;
  bytes: number;
}

// The shape of a tree: how many small files, and the sizes of the large ones.
export interface TreeShape {
  smallFiles: number;
  large: number[];
}

// Row 1's tree until issue 21 (about 19 MB compressed), and the quick one.
export const FULL_TREE: TreeShape = { smallFiles: 4000, large: [8 << 20, 5 << 20, 3 << 20] };
export const QUICK_TREE: TreeShape = { smallFiles: 300, large: [1 << 20] };

export function makeAppTree(dir: string, quick: boolean, shape: TreeShape = quick ? QUICK_TREE : FULL_TREE): AppTree {
  const { smallFiles, large } = shape;
  let bytes = 0;
  mkdirSync(dir, { recursive: true });
  const words = ['const', 'function', 'return', 'module', 'exports', 'require', 'value', 'if', 'else', '=>', '{', '}', ';', 'await', 'this'];
  for (let i = 0; i < smallFiles; i++) {
    const sub = path.join(dir, 'node_modules', `pkg${i % 200}`, `lib${i % 7}`);
    mkdirSync(sub, { recursive: true });
    // 200 B to 4 KB of code-like text with random identifiers: compresses about as code does.
    const r = randomBytes(64);
    const n = 200 + ((r[0] as number) << 4);
    let text = '';
    let j = 0;
    while (text.length < n) text += (words[(r[j++ % 64] as number) % words.length] as string) + ' ' + r.toString('hex', j % 60, (j % 60) + 4) + '\n';
    writeFileSync(path.join(sub, `f${i}.js`), text);
    bytes += text.length;
  }
  mkdirSync(path.join(dir, 'assets'), { recursive: true });
  large.forEach((size, i) => {
    writeFileSync(path.join(dir, 'assets', `blob${i}.bin`), randomBytes(size));
    bytes += size;
  });
  writeFileSync(path.join(dir, 'server.js'), 'require("http").createServer((q, s) => s.end("ok")).listen(0);\n');
  return { dir, files: smallFiles + large.length + 2, bytes };
}

// A tarball of the tree as version `version` of `app`, top-level names without "./".
export function tarballOf(tree: AppTree, app: string, version: string, out: string): void {
  const release = { name: app, version, start: { command: ['node', 'server.js'] } };
  writeFileSync(path.join(tree.dir, 'steward-release.json'), JSON.stringify(release) + '\n');
  execFileSync('tar', ['-C', tree.dir, '-czf', out, 'steward-release.json', 'server.js', 'node_modules', 'assets']);
}

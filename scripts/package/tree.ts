// Helpers that lay out a package's file tree: copies with normalized modes, gzip as Debian wants
// it, the control file's Installed-Size and md5sums.
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

// Copies a file or folder to `to`, folders 0755 and files 0755 when executable by anyone, else
// 0644: the checkout's umask never reaches the package (dpkg-deb keeps the modes it is given).
export function copyNormalized(from: string, to: string): void {
  const st = lstatSync(from);
  mkdirSync(path.dirname(to), { recursive: true, mode: 0o755 });
  if (st.isSymbolicLink()) {
    symlinkSync(readlinkSync(from), to);
  } else if (st.isDirectory()) {
    mkdirSync(to, { recursive: true, mode: 0o755 });
    chmodSync(to, 0o755);
    for (const name of readdirSync(from).sort()) copyNormalized(path.join(from, name), path.join(to, name));
  } else if (st.isFile()) {
    copyFileSync(from, to);
    chmodSync(to, st.mode & 0o111 ? 0o755 : 0o644);
  }
}

// Writes `bytes` at `to` with `mode`, making its folders (0755).
export function writeFile(to: string, bytes: string | Buffer, mode = 0o644): void {
  mkdirSync(path.dirname(to), { recursive: true, mode: 0o755 });
  writeFileSync(to, bytes);
  chmodSync(to, mode);
}

// gzip at the best compression with no name and no time in the header (Debian Policy 12.3,
// lintian's *-not-compressed-with-max-compression): the same input makes the same bytes.
export function gzip(bytes: string | Buffer): Buffer {
  return gzipSync(bytes, { level: 9 });
}

// Every regular file below `root`, relative to it, sorted; DEBIAN/ left out.
export function filesBelow(root: string, rel = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(root, rel)).sort()) {
    const r = rel ? `${rel}/${name}` : name;
    if (r === 'DEBIAN') continue;
    const st = lstatSync(path.join(root, r));
    if (st.isDirectory()) out.push(...filesBelow(root, r));
    else if (st.isFile()) out.push(r);
  }
  return out;
}

// DEBIAN/md5sums: one `<md5>  <path>` line per regular file.
export function md5sums(root: string): string {
  return filesBelow(root).map((f) => `${createHash('md5').update(readFileSync(path.join(root, f))).digest('hex')}  ${f}\n`).join('');
}

// Installed-Size in KiB, as dpkg-gencontrol counts it: each file rounded up to 1 KiB, one per
// folder and symlink.
export function installedSizeKiB(root: string, rel = ''): number {
  let kib = 0;
  for (const name of readdirSync(path.join(root, rel))) {
    const r = rel ? `${rel}/${name}` : name;
    if (r === 'DEBIAN') continue;
    const st = lstatSync(path.join(root, r));
    if (st.isDirectory()) kib += 1 + installedSizeKiB(root, r);
    else kib += st.isFile() ? Math.ceil(st.size / 1024) : 1;
  }
  return kib;
}

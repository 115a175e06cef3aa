import { execFile } from 'node:child_process';

// Durable tree (DESIGN §2): one syncfs of the file system holding `dir` (`sync -f`)
// instead of an fsync per extracted file. node:child_process, not execa: execa is ~100 modules
// and ~10 MB of RSS that a helper would keep for good after its first stage (issue 8 row 5).
// No shell, an environment built from nothing, no stdin; a non-zero exit or a signal rejects.
export function syncFileSystem(dir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile('sync', ['-f', dir], { env: { PATH: '/usr/local/bin:/usr/bin:/bin' } }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`sync -f ${dir} failed: ${stderr.trim() || err.message}`, { cause: err }));
      else resolve();
    });
    child.stdin?.end();
  });
}

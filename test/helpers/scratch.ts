// A temp folder removed when the test process exits, whether its tests passed or not: for files
// that make one per case (the backup tests make hundreds a run, which were left in /tmp).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const made: string[] = [];

export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  if (made.length === 0) process.once('exit', () => made.forEach((d) => rmSync(d, { recursive: true, force: true })));
  made.push(dir);
  return dir;
}

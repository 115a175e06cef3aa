import { promises as fsp } from 'node:fs';
import { StewardError, toStewardError } from '../core/errors.js';

// Bytes an unprivileged writer may still use on the file system holding `dir` (statfs bavail * bsize).
export async function freeBytes(dir: string): Promise<number> {
  try {
    const st = await fsp.statfs(dir);
    return st.bavail * st.bsize;
  } catch (err) {
    throw toStewardError(err, 'IO_ERROR', `statfs ${dir}`);
  }
}

// Free (for an unprivileged writer) and total bytes of the file system holding `dir`.
export async function diskSpace(dir: string): Promise<{ freeBytes: number; totalBytes: number }> {
  try {
    const st = await fsp.statfs(dir);
    return { freeBytes: st.bavail * st.bsize, totalBytes: st.blocks * st.bsize };
  } catch (err) {
    throw toStewardError(err, 'IO_ERROR', `statfs ${dir}`);
  }
}

// Refuses (DISK_FULL) when `dir` has less than needBytes plus the reserve free.
export async function ensureFreeSpace(dir: string, needBytes: number, reserveBytes: number): Promise<void> {
  const free = await freeBytes(dir);
  if (free < needBytes + reserveBytes) {
    throw new StewardError('DISK_FULL', `need ${needBytes} bytes plus the ${reserveBytes}-byte reserve on ${dir}, only ${free} free`, {
      details: { dir, needBytes, reserveBytes, freeBytes: free },
    });
  }
}

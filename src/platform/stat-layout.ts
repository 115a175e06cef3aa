// What stat-ahead.ts and its worker (stat-worker.ts) share: a job, and the layout of the shared
// buffer. Int32 0: how many paths are done; Int32 1: STAT_STOP when the main thread wants no more.
// Then FIELDS doubles a path: kind (0 missing or unreadable, 1 regular file, 2 anything else),
// inode, change time (ms), mode, size, uid, gid.
export const FIELDS = 7;
export const STAT_STOP = 1;

export interface StatJob {
  // The paths, one a line (a single string crosses to the worker faster than an array of 8,000).
  paths: string;
  shared: SharedArrayBuffer;
}

export function sharedFor(n: number): SharedArrayBuffer {
  return new SharedArrayBuffer(8 + n * FIELDS * 8);
}

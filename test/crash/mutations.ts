// Mutations of a recorded trace for the explorer's own tests (issue 7, item 3): the trace as
// it would have been had steward left out one fsync. Dropping the recorded operation is a
// faithful model of the missing call: an fsync changes no content, so the rest of the trace
// is exactly what the mutated code would have done.
import type { FsOp } from './fs-model.js';

// Without the fsync of the app folder that follows each rename onto `current`.
export function withoutFolderFsyncAfterCurrentRename(ops: readonly FsOp[]): FsOp[] {
  const drop = new Set<number>();
  ops.forEach((op, i) => {
    if (op.k !== 'rename' || op.toName !== 'current') return;
    const j = ops.findIndex((o, jj) => jj > i && o.k === 'fsync' && o.ino === op.toParent);
    if (j >= 0) drop.add(j);
  });
  if (drop.size === 0) throw new Error('the trace has no fsync after a rename onto current');
  return ops.filter((_, i) => !drop.has(i));
}

// Without the fsync of the journal's temp file before it is renamed over the journal.
export function withoutJournalFileFsync(ops: readonly FsOp[]): FsOp[] {
  const isJournalTmp = (op: FsOp) => op.k === 'fsync' && /^var\/lib\/steward\/journal\/\.[^/]+\.tmp$/.test(op.path);
  if (!ops.some(isJournalTmp)) throw new Error('the trace has no fsync of a journal temp file');
  return ops.filter((op) => !isJournalTmp(op));
}

// Without the syncfs that makes an extracted release tree durable before it is renamed into
// versions/ (the durable tree recipe).
export function withoutTreeSyncfs(ops: readonly FsOp[]): FsOp[] {
  if (!ops.some((op) => op.k === 'syncfs')) throw new Error('the trace has no syncfs');
  return ops.filter((op) => op.k !== 'syncfs');
}

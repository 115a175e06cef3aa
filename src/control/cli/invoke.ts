// Runs an operation for a command (docs/design.md §12): on the database (--db) as `local:<user>`, or
// through the admin API with --server, where the server runs the very same operation. The
// command prints what comes back the same way either way, so output and exit codes agree.
import type { Command } from 'commander';
import { localActor } from '../audit/record-audit.js';
import type { ReleaseBytes } from '../catalog/upload-file.js';
import { runOperation, type Operation } from '../operations/operation.js';
import { artifactsDirFor, targetOf, withStoreAt } from './context.js';
import { callRemote } from './remote-client.js';

// The output of `op` run with `input` (and the bytes of an upload) where the command points.
export async function invoke<I, O>(cmd: Command, op: Operation<I, O>, input: Record<string, unknown>, upload?: ReleaseBytes): Promise<O> {
  const target = targetOf(cmd);
  if (target.kind === 'remote') return (await callRemote(target.remote, op, dropUndefined(input), upload)) as O;
  const artifactsDir = artifactsDirFor(cmd, target.db);
  return withStoreAt(target.db, async (store) => {
    // The bytes become an upload's temporary file first, as they would on the server.
    const owned = upload ? await (await import('../catalog/upload-file.js')).copyIntoUploads(artifactsDir, upload) : undefined;
    return runOperation({ store, actor: localActor(), artifactsDir, hookCaFile: (cmd.optsWithGlobals() as { caFile?: string }).caFile }, op, input, owned);
  });
}

// Every item of a paged operation's list, page after page.
export async function invokeAll<I, T>(cmd: Command, op: Operation<I, Record<string, unknown>>, input: Record<string, unknown>): Promise<T[]> {
  const key = op.paged as string;
  const items: T[] = [];
  let cursor: string | null = null;
  do {
    const page: Record<string, unknown> = await invoke(cmd, op, { ...input, ...(cursor !== null ? { cursor } : {}) });
    items.push(...(page[key] as T[]));
    cursor = page.nextCursor as string | null;
  } while (cursor !== null);
  return items;
}

function dropUndefined(input: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
}

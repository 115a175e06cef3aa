// One operation per steward-control command (docs/design.md §12): what the local CLI runs on the store
// and what the admin API runs for `/v1/admin/<command words>`, with the same input (the
// command's arguments and flags, as the CLI takes them) and the same output (the command's
// --json document). One definition, so the two can never answer differently.
//
// This module holds no schema (they are in inputs.ts and beside each operation): the remote CLI
// reads an operation's route and method from here without evaluating zod.
import type * as z from '../../core/zod-mini.js';
import { StewardError } from '../../core/errors.js';
import { formatIssues } from '../../core/format-issues.js';
import { nulPath } from '../../core/nul.js';
import type { Actor } from '../audit/record-audit.js';
import type { ReleaseBytes } from '../catalog/upload-file.js';
import type { ControlStore, OperatorRole } from '../store/store.js';

export interface OpContext {
  store: ControlStore;
  actor: Actor;
  // Where kept release tarballs live (catalog/artifact-path.ts).
  artifactsDir: string;
  // A PEM CA bundle that hook receivers' certificates may chain to, beside Node's own (--ca-file).
  hookCaFile?: string | undefined;
}

// Uploaded bytes, already in a temporary file inside the artifacts folder that the operation
// owns (`owned`): it renames the file into place or removes it, whatever happens.
export type Upload = ReleaseBytes;

export interface Operation<I = any, O = any> {
  // The CLI command: `rollout start`; its route is /v1/admin/rollout/start.
  command: string;
  // The audit action of a change (`rollout.start`); null for a read. Reads are GET, changes POST.
  action: string | null;
  // The lowest role that may run it.
  role: OperatorRole;
  input: z.ZodMiniType<I>;
  // Takes an upload after its input (release add).
  upload?: boolean;
  // A paged read: the output's list under this key, and `nextCursor`.
  paged?: string;
  // Runs it; a change records its audit entry in the transaction that makes it.
  run(ctx: OpContext, input: I, upload?: Upload): Promise<O>;
}

export const ADMIN_PREFIX = '/v1/admin/';

// The admin API path of an operation.
export function routeOf(op: Pick<Operation, 'command'>): string {
  return ADMIN_PREFIX + op.command.split(' ').join('/');
}

// The HTTP method of an operation: GET for a read, POST for a change.
export function methodOf(op: Pick<Operation, 'action'>): 'GET' | 'POST' {
  return op.action === null ? 'GET' : 'POST';
}

// An operation's input checked against its schema; a bad one, or one holding a NUL character
// anywhere (nulPath), is a USAGE error (exit 2; 400 over HTTP), on either backend.
export function parseInput<I>(op: Operation<I>, raw: unknown): I {
  const nul = nulPath(raw);
  if (nul !== null) throw new StewardError('USAGE', `${op.command}: ${nul} holds a NUL character (\\u0000), which no name, id, label, selector or cursor holds`);
  const r = op.input.safeParse(raw);
  if (!r.success) throw new StewardError('USAGE', `${op.command}: ${formatIssues(r.error.issues)}`);
  return r.data;
}

// Checks `raw` against the operation's input and runs it.
export function runOperation<I, O>(ctx: OpContext, op: Operation<I, O>, raw: unknown, upload?: Upload): Promise<O> {
  return op.run(ctx, parseInput(op, raw), upload);
}

import { createReadStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Command, Option } from 'commander';
import { StewardError } from '../core/errors.js';
import type { Envelope } from '../core/release-schemas.js';
import { INTEGRITY_RE } from '../core/name-checks.js';
import { attemptIdArg } from './arguments.js';
import type { SocketKind } from '../protocol/ops.js';
import type { FieldsOf } from '../protocol/requests.js';

export interface ReleaseSourceOptions {
  manifest?: string;
  file?: string;
  integrity?: string;
  allowUnsigned?: boolean;
  allowDowngrade?: boolean;
  force?: boolean;
  attemptId?: string;
}

// The source flags shared by `stage` and `update` (docs/design.md §8).
export function addReleaseSourceOptions(cmd: Command): Command {
  return cmd
    .option('--manifest <file>', 'a file holding one signed manifest envelope')
    .option('--file <tgz>', 'the release tarball (a path over admin.sock, uploaded over helper.sock)')
    .addOption(new Option('--integrity <sri>', 'sha512-<base64> of the tarball (required with --allow-unsigned)'))
    .option('--allow-unsigned', 'accept a tarball without a signed manifest (admin.sock only)')
    .option('--allow-downgrade', 'accept a version below the highest active one (admin.sock only)')
    .option('--force', 'try a quarantined version before its retry time (admin.sock only)')
    .option('--attempt-id <id>', 'name the attempt (a retry with the same id attaches to it)');
}

async function readManifestFile(file: string): Promise<Envelope> {
  let text: string;
  try {
    const st = await fsp.stat(file);
    if (st.size > 48 * 1024) throw new Error('larger than 48 KiB');
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    throw new StewardError('USAGE', `--manifest ${file}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new StewardError('USAGE', `--manifest ${file}: not JSON`);
  }
  // Why loaded here: zod is ~100 ms of start-up, and only --manifest needs it (issue 8 row 1).
  const { envelopeSchema } = await import('../core/release-schemas.js');
  const parsed = envelopeSchema.safeParse(json);
  if (!parsed.success) throw new StewardError('USAGE', `--manifest ${file}: not a signature envelope {payload, sig, keyId}`);
  return parsed.data;
}

// The fields of a stage or update request that say where the release comes from.
export type ReleaseSourceFields = Omit<FieldsOf<'stage'>, 'app' | 'version'>;

// Turns the flags into request fields, plus the upload when the socket is helper.sock.
export async function buildReleaseRequest(
  o: ReleaseSourceOptions,
  kind: SocketKind,
): Promise<{ fields: ReleaseSourceFields; upload?: { size: number; stream: Readable } }> {
  if (!o.manifest && !o.file) throw new StewardError('USAGE', 'give --manifest FILE, or --file TGZ with --integrity and --allow-unsigned');
  if (o.integrity !== undefined && !INTEGRITY_RE.test(o.integrity)) {
    throw new StewardError('USAGE', '--integrity must be one SRI token sha512-<base64> (88 base64 characters)');
  }
  if (o.allowUnsigned && (!o.file || !o.integrity)) {
    throw new StewardError('USAGE', '--allow-unsigned needs --file TGZ and --integrity SRI: without a signed manifest, the digest is what the bytes are checked against');
  }
  if (o.attemptId !== undefined) attemptIdArg(o.attemptId);
  const fields: ReleaseSourceFields = {};
  if (o.manifest) fields.manifest = await readManifestFile(o.manifest);
  if (o.integrity) fields.integrity = o.integrity;
  if (o.allowUnsigned) fields.allowUnsigned = true;
  if (o.allowDowngrade) fields.allowDowngrade = true;
  if (o.force) fields.force = true;
  if (o.attemptId) fields.attemptId = o.attemptId;
  if (!o.file) return { fields };
  const file = path.resolve(o.file);
  if (kind === 'admin') {
    fields.path = file;
    return { fields };
  }
  let size: number;
  try {
    const st = await fsp.stat(file);
    if (!st.isFile()) throw new Error('not a regular file');
    size = st.size;
  } catch (err) {
    throw new StewardError('USAGE', `--file ${o.file}: ${(err as Error).message}`);
  }
  fields.upload = size;
  return { fields, upload: { size, stream: createReadStream(file) } };
}

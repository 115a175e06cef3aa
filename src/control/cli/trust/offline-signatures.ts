// Air-gapped signing (docs/trust.md, "Signing on a machine with no network"): `trust sign-root
// --offline` reads what is pending from a file (the output of `trust status --json`, carried
// from a connected machine), signs it with a key that never leaves the air-gapped machine, and
// writes the signatures to a file; `trust sign-root --signature FILE` sends them from a connected
// machine. The file names, beside each signature, the role and version signed and the sha256 of
// the canonical `signed` it covers, so that a pending item replaced meanwhile is refused here by
// name, before the server would refuse the signature as not verifying.
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { Signature, type Metadata, type Root, type Targets } from '@tufjs/models';
import { canonicalBytes } from '../../../core/canonical-json.js';
import { StewardError } from '../../../core/errors.js';
import { formatIssues } from '../../../core/format-issues.js';
import { intSchema } from '../../../core/names.js';
import * as z from '../../../core/zod-mini.js';
import { readStatus, type PendingRole, type TrustStatus } from './api.js';

export const SIGNATURES_KIND = 'steward-trust-signatures';
// A trust status (every delegation's metadata included) is well under this; a signature file far.
const MAX_IN_BYTES = 64 * 1024 * 1024;
const MAX_SIGNATURES_BYTES = 1024 * 1024;

const signatureEntrySchema = z.strictObject({
  role: z.enum(['root', 'targets']),
  version: intSchema(1),
  keyid: z.string().check(z.regex(/^[0-9a-f]{64}$/, 'a TUF key id (64 hex)')),
  sig: z.string().check(z.regex(/^[0-9a-f]{1,1024}$/, 'a hex signature')),
  signedSha256: z.string().check(z.regex(/^[0-9a-f]{64}$/, 'a sha256 (64 hex)')),
});
export type SignatureEntry = z.infer<typeof signatureEntrySchema>;

const signatureFileSchema = z.strictObject({
  kind: z.literal(SIGNATURES_KIND),
  v: z.literal(1),
  signedAt: z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/, 'an ISO 8601 UTC time')),
  signatures: z.array(signatureEntrySchema).check(z.minLength(1), z.maxLength(8)),
});
export type SignatureFile = z.infer<typeof signatureFileSchema>;

// The sha256 of what a signature of `md` covers (its `signed`, canonical): names the exact
// pending item a signature was made for.
export function signedDigest(md: Metadata<Root | Targets>): string {
  return createHash('sha256').update(canonicalBytes(md.signed.toJSON())).digest('hex');
}

function readSmallFile(file: string, flag: string, max: number): Buffer {
  let size: number;
  try {
    size = statSync(file).size;
  } catch (err) {
    throw new StewardError('NOT_FOUND', `cannot read ${flag} ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (size > max) throw new StewardError('USAGE', `${flag} ${file} is ${size} bytes, over the ${max} a ${flag === '--in' ? 'trust status' : 'signature file'} may be`);
  return readFileSync(file);
}

function jsonOfFile(file: string, flag: string, max: number): unknown {
  try {
    return JSON.parse(readSmallFile(file, flag, max).toString('utf8'));
  } catch (err) {
    if (err instanceof StewardError) throw err;
    throw new StewardError('USAGE', `${flag} ${file} is not JSON: ${(err as Error).message}`, { cause: err });
  }
}

// The trust status a connected machine saved (`steward-control trust status --json > FILE`).
export function readStatusFile(file: string): TrustStatus {
  const raw = jsonOfFile(file, '--in', MAX_IN_BYTES);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || !('pending' in raw)) {
    throw new StewardError('USAGE', `--in ${file} is not a trust status: save one on a connected machine with \`steward-control --server URL trust status --json > ${file}\``);
  }
  try {
    return readStatus(raw);
  } catch (err) {
    throw new StewardError('USAGE', `--in ${file}: ${(err as Error).message.replace(/^the server's trust status/, 'the trust status')}`, { cause: err });
  }
}

export function signatureFileOf(entries: SignatureEntry[], now: number): SignatureFile {
  return { kind: SIGNATURES_KIND, v: 1, signedAt: new Date(now).toISOString(), signatures: entries };
}

// A signature file, checked: it came on removable media from another machine.
export function readSignatureFile(file: string): SignatureFile {
  const parsed = signatureFileSchema.safeParse(jsonOfFile(file, '--signature', MAX_SIGNATURES_BYTES));
  if (!parsed.success) throw new StewardError('USAGE', `--signature ${file} is not a signature file of \`trust sign-root --offline\`: ${formatIssues(parsed.error.issues)}`);
  return parsed.data;
}

// Refuses a signature whose pending item is gone or was replaced since it was signed.
export function checkStillPending(status: TrustStatus, e: SignatureEntry, file: string): Metadata<Root | Targets> {
  const md = status.pending[e.role as PendingRole] as Metadata<Root | Targets> | null;
  const published = e.role === 'root' ? status.root : status.targets;
  if (!md) {
    const already = published && published.signed.version >= e.version;
    throw new StewardError(
      'NOT_FOUND',
      `${file}: key ${e.keyid} signed ${e.role} v${e.version}, but no ${e.role} is pending on the server${already ? ` (${e.role} v${published.signed.version} is published: its thresholds were met without this signature)` : ''}`,
    );
  }
  if (md.signed.version !== e.version || signedDigest(md) !== e.signedSha256) {
    throw new StewardError(
      'STATE_INVALID',
      `${file}: key ${e.keyid} signed ${e.role} v${e.version} (sha256 ${e.signedSha256.slice(0, 16)}…), but the server's pending ${e.role} is v${md.signed.version} (sha256 ${signedDigest(md).slice(0, 16)}…): it was replaced since; save the trust status again, check it and sign it again`,
    );
  }
  return md;
}

// `md` with the signature `e` carries added (what the server holds once it took it), to count.
export function addSignature(md: Metadata<Root | Targets>, e: SignatureEntry): void {
  md.signatures[e.keyid] = new Signature({ keyID: e.keyid, sig: e.sig });
}

import type { KeyObject } from 'node:crypto';
import type { Command } from 'commander';
import { StewardError } from '../../core/errors.js';
import type { Envelope } from '../../core/release-schemas.js';
import { verifyReceipt } from '../../platform/verify-receipt.js';
import { readFileNoFollow } from '../../platform/fs-atomic.js';
import { keyIdOf, parsePublicKey } from '../../platform/keys.js';
import { appArg } from '../arguments.js';
import { cliContext, type GlobalOptions } from '../context.js';
import { EXIT } from '../error-message.js';
import { printJson, printLines, table, when } from '../output.js';

export interface CheckedReceipt {
  seq: number | null;
  verified: boolean;
  // Verified: the signed payload. Not verified: whatever the envelope decodes to (or null), untrusted.
  payload: Record<string, unknown> | null;
  envelope: unknown;
}

// Verifies each receipt the helper answered against helper.pub as read by the CLI itself.
// A receipt for another app than the one asked for is not verified either.
export function checkReceipts(envelopes: unknown[], publicKey: KeyObject | null, app?: string): CheckedReceipt[] {
  const out = envelopes.map((envelope): CheckedReceipt => {
    const payload = publicKey ? verifyReceipt(envelope as Envelope, publicKey) : null;
    if (payload && (app === undefined || payload.app === app)) return { seq: payload.seq, verified: true, payload, envelope };
    const decoded = decodeUntrusted(envelope);
    return { seq: typeof decoded?.seq === 'number' ? decoded.seq : null, verified: false, payload: decoded, envelope };
  });
  return out.sort((a, b) => (a.seq ?? Infinity) - (b.seq ?? Infinity));
}

function decodeUntrusted(envelope: unknown): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(Buffer.from(String((envelope as { payload?: unknown }).payload), 'base64').toString('utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

// helper.pub, read by the CLI: the helper's answer does not vouch for itself.
async function readHelperPub(file: string): Promise<KeyObject> {
  try {
    const pem = await readFileNoFollow(file, 16 * 1024);
    if (pem === null) throw new Error('does not exist');
    return parsePublicKey(pem);
  } catch (err) {
    throw new StewardError('STATE_INVALID', `${file}: cannot read the helper's public key (${(err as Error).message}); receipts cannot be verified`, { cause: err });
  }
}

const str = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : '-');

// `agentctl receipts [app]`
export function registerReceipts(program: Command): void {
  program
    .command('receipts [app]')
    .description("the helper's signed receipts, verified against helper.pub")
    .action(async (app: string | undefined, _o, cmd: Command) => {
      const fields = app !== undefined ? { app: appArg(app) } : {};
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const r = await ctx.helper.receipts(fields);
      const publicKey = await readHelperPub(ctx.paths.helperPub);
      const checked = checkReceipts(Array.isArray(r?.receipts) ? r.receipts : [], publicKey, app);
      const bad = checked.filter((c) => !c.verified).length;
      // Exit 1 without an error document: stdout already holds the answer.
      if (bad) process.exitCode = EXIT.failure;
      if (ctx.json) return printJson({ helperKeyId: r?.helperKeyId ?? null, receipts: checked });
      const rows = [['SEQ', 'APP', 'ATTEMPT', 'FROM→TO', 'OUTCOME', 'REASON', 'WHEN', 'VERIFIED']];
      for (const c of checked) {
        const p = c.payload ?? {};
        const reason = (p.reason as { code?: unknown } | undefined)?.code;
        const at = typeof p.updatedAt === 'number' ? when(p.updatedAt) : '-';
        rows.push([str(c.seq), str(p.app), str(p.attemptId), `${str(p.fromVersion)}→${str(p.targetVersion)}`, str(p.outcome), str(reason), at, c.verified ? 'yes' : 'NOT VERIFIED']);
      }
      process.stdout.write(checked.length ? table(rows) : `no receipts${app ? ` for ${app}` : ''}\n`);
      const pubId = keyIdOf(publicKey);
      if (r?.helperKeyId !== pubId) printLines([`agentctl: the helper says its key is ${str(r?.helperKeyId)}, helper.pub is ${pubId}`], process.stderr);
      if (bad) process.stderr.write(`agentctl: ${bad} receipt(s) NOT VERIFIED against ${ctx.paths.helperPub}\n`);
    });
}

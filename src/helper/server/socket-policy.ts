import { StewardError } from '../../core/errors.js';
import { SELF_APP } from '../../core/self-schemas.js';
import { ADMIN_ONLY_OPS, type OpName, type SocketKind } from '../../protocol/ops.js';

// The ops on the app steward that admin.sock alone may ask for. Not `update`: over helper.sock
// it is what a rollout of steward relays, and it is held to the rules of any app's update there
// (a manifest signed by a key in trusted-keys/steward/, or under TUF a directed target of
// app.steward, ops/update.ts; never a downgrade, a quarantined version or a local path), so a
// group member can only move steward forward to a version its signer released, which then goes
// through the launcher's trial. A rollback or a stop of steward
// would take a host back or down on a group member's word alone.
const SELF_ADMIN_OPS = ['rollback', 'stop', 'start', 'restart'] as const;

// What helper.sock (group `steward`) may not ask for (docs/design.md §3.1, §7): the admin-only
// ops (release-hold among them), and any stage or update that names a local path, skips the
// signature, the downgrade check or a quarantine (`force`), or comes without a signed
// manifest. admin.sock (root) may do all.
// Checked on the raw request, before schema validation, so that an op this helper
// does not implement yet is still refused for the right reason.
export function checkSocketPolicy(kind: SocketKind, op: OpName, request: Record<string, unknown>): void {
  if (kind === 'admin') return;
  if ((ADMIN_ONLY_OPS as readonly string[]).includes(op)) {
    throw new StewardError('FORBIDDEN', `op "${op}" is only available on admin.sock`);
  }
  if (op === 'stage' || op === 'update') {
    const asked = ['path', 'allowUnsigned', 'allowDowngrade', 'force'].filter(
      (k) => request[k] !== undefined && request[k] !== false,
    );
    if (asked.length > 0 || request.manifest === undefined) {
      const why = asked.length > 0 ? ` (refused: ${asked.join(', ')})` : ' (no manifest)';
      throw new StewardError(
        'FORBIDDEN',
        `helper.sock accepts only signed manifests by URL or upload${why}; local paths, unsigned, downgrade and --force requests need admin.sock`,
      );
    }
  }
  // steward's own code goes back or stops only on root's word (docs/design.md §14): a group member
  // could otherwise put back an older helper, which judges every other request.
  if (request.app === SELF_APP && (SELF_ADMIN_OPS as readonly string[]).includes(op)) {
    throw new StewardError('FORBIDDEN', `${op} of the app ${SELF_APP} (steward itself) is only available on admin.sock`);
  }
  if (op === 'rollback' && request.to !== undefined) {
    throw new StewardError('FORBIDDEN', 'rollback --to is only available on admin.sock; helper.sock rolls back to previous only');
  }
}

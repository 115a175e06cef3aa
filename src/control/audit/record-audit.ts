// The audit log (docs/design.md §12): every change, login and denial is recorded in the same
// transaction as the change itself, so a change never lands without its entry, nor an entry
// without its change.
import os from 'node:os';
import type { OperatorRole, StoreTx } from '../store/store.js';

// Who does something: an operator (over the API or a session), or the local CLI.
export interface Actor {
  // The operator's name, or `local:<user>` for the local CLI.
  operator: string;
  role: OperatorRole;
  // The request's source address; null for the local CLI.
  source: string | null;
}

// The local CLI: it holds the database file, so it may do anything, and is named after the
// user of the calling uid.
export function localActor(): Actor {
  let user: string;
  try {
    user = os.userInfo().username;
  } catch {
    // A uid without a passwd entry (a container's): named by its number.
    user = `uid=${process.getuid?.() ?? 'unknown'}`;
  }
  return { operator: `local:${user}`, role: 'admin', source: null };
}

// Records one entry at the transaction's time.
export async function recordAudit(tx: Pick<StoreTx, 'now' | 'audit'>, actor: Pick<Actor, 'operator' | 'source'> | { operator: null; source: string | null }, action: string, target: string | null, details: Record<string, unknown> = {}): Promise<void> {
  await tx.audit.insert({ at: await tx.now(), operator: actor.operator, action, target, source: actor.source, details });
}

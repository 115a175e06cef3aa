// The ops of the local API (docs/design.md §7), apart from their zod schemas (schemas.ts re-exports
// these): the helper's dispatch and socket policy need the names without loading zod (issue 8,
// row 5).
export const PROTOCOL_VERSION = 1;
export const MAX_REQUEST_LINE = 64 * 1024;

// Ops any member of group `steward` may use through helper.sock.
export const HELPER_SOCK_OPS = [
  'status',
  'receipts',
  'releases',
  'stage',
  'update',
  'rollback',
  'start',
  'stop',
  'restart',
  // The new steward-agent's confirm of an answered heartbeat (docs/design.md §14): the helper believes
  // only the process it started for the attempt (SO_PEERCRED), whatever the request says.
  'agent-confirm',
  // The agent hands the helper the fleet's TUF metadata it fetched (docs/design.md §21): the helper
  // trusts of it only what verifies from the root it holds.
  'trust-refresh',
] as const;
// Ops only root may use, through admin.sock. release-hold among them: a member of group steward
// (the agent, so the control plane) must never undo an operator's rollback or stop (docs/design.md §4);
// and hold, the host's own hold (§18), which only the host's operator puts.
// verify (docs/design.md §20) reads every byte of every release: root's to run, not the agent's.
// trust-set-root (docs/design.md §21): which TUF root a host trusts is root's word alone.
export const ADMIN_ONLY_OPS = ['recover', 'prune', 'release-hold', 'hold', 'verify', 'trust-set-root'] as const;
export const ALL_OPS = [...HELPER_SOCK_OPS, ...ADMIN_ONLY_OPS] as const;
export type OpName = (typeof ALL_OPS)[number];
export type SocketKind = 'helper' | 'admin';

import type { ReasonCode } from '../core/errors.js';
import { isNothingChanged } from '../core/errors.js';

// docs/design.md §8 exit codes.
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  refused: 3,
  rolledBack: 4,
  unreachable: 5,
} as const;

// The one place that maps reason codes to what an operator reads and the exit code.
const TEXT: Record<ReasonCode, { exit: number; hint: string }> = {
  BUSY: { exit: EXIT.refused, hint: 'another operation on this app is running; wait for it or attach with its --attempt-id' },
  RECOVERING: { exit: EXIT.refused, hint: 'the helper is still recovering after its start; try again in a moment' },
  HELD: { exit: EXIT.refused, hint: 'an operator holds this app; `agentctl release-hold <app>` (as root) clears it' },
  BLOCKED: { exit: EXIT.refused, hint: 'the app is blocked; see `agentctl status <app>` and `agentctl recover <app>`' },
  QUARANTINED: { exit: EXIT.refused, hint: 'this version failed recently; wait for its retry time, or as root pass --force (admin.sock)' },
  DOWNGRADE_REFUSED: {
    exit: EXIT.refused,
    hint: 'versions below the highest active one are refused (rollback attack); from the fleet, `steward-control release allow-downgrade APP VERSION --key <a release key of APP>` signs the authorization a host needs to go back; on the host, --allow-downgrade over admin.sock',
  },
  DISK_FULL: { exit: EXIT.refused, hint: 'free disk space on the release store and try again' },
  WINDOW_CLOSED: { exit: EXIT.refused, hint: "the rollout window this update was issued in has closed; the control plane asks again in the next one" },
  HANDOVER: { exit: EXIT.refused, hint: 'the helper is handing over to a new steward version (a self-update trial); try again once it has restarted' },
  INTEGRITY_MISMATCH: { exit: EXIT.refused, hint: 'the bytes are not the ones the manifest or --integrity names' },
  SIGNATURE_INVALID: { exit: EXIT.refused, hint: 'the manifest is not signed by a key in /etc/steward/trusted-keys/<app>/ that root trusts (a key file root owns, nobody else can write, not a symlink; the message names any it ignored)' },
  MANIFEST_EXPIRED: { exit: EXIT.refused, hint: 'the signed manifest has expired; publish a fresh one' },
  UNSAFE_ARCHIVE: { exit: EXIT.refused, hint: 'the archive breaks an extraction rule; nothing was installed' },
  RELEASE_INVALID: { exit: EXIT.refused, hint: 'the release or its steward-release.json is not valid for this app' },
  FETCH_FAILED: { exit: EXIT.refused, hint: 'the release could not be downloaded (from any control plane the host knows, within the retries a rollout allows), or, under TUF, the newer metadata the control plane offered could not be fetched and the stored one does not vouch for the update (the message names both); a rollout counts it against the node, not the release' },
  TRUST_ROLLBACK: { exit: EXIT.refused, hint: 'the TUF metadata offered is older than what this host trusts (a freeze or a metadata rollback); nothing was trusted from it; a rollout counts it against the host, not the release' },
  TRUST_EXPIRED: { exit: EXIT.refused, hint: "the TUF metadata has expired; the host needs a fresh bundle from steward-control (its timestamp is re-signed hourly); a rollout counts it against the host, not the release" },
  TRUST_SIGNATURE: { exit: EXIT.refused, hint: "TUF metadata is not signed by a threshold of its role's keys; nothing was trusted from it" },
  TRUST_MISMATCH: { exit: EXIT.refused, hint: 'TUF metadata is not the version or bytes the timestamp or snapshot names (mix-and-match); nothing was trusted from it' },
  TRUST_TOO_LARGE: { exit: EXIT.refused, hint: 'a TUF metadata file is over its size cap (endless data); nothing was trusted from it' },
  TRUST_INVALID: { exit: EXIT.refused, hint: 'the TUF metadata or root is malformed or unusable; the message says which and why' },
  TRUST_UNSIGNED: { exit: EXIT.refused, hint: "under TUF, the manifest (or its index) is not a target signed by the app's delegation" },
  TRUST_NOT_DIRECTED: { exit: EXIT.refused, hint: "under TUF, an update needs a directive of the root's director for this node, app, version and attempt, still valid; a rollout counts it against the host, not the release" },
  REPLACEMENT_UNHEALTHY: { exit: EXIT.rolledBack, hint: 'the new version failed its health check and was rolled back' },
  APP_NOT_READY: { exit: EXIT.rolledBack, hint: 'the new version never wrote the newline on STEWARD_READY_FD that says it is ready, within health.timeoutMs, and was rolled back' },
  READY_FD_CLOSED: { exit: EXIT.rolledBack, hint: 'the new version closed STEWARD_READY_FD (or exited) without writing the newline that says it is ready, and was rolled back' },
  AGENT_UNCONFIRMED: { exit: EXIT.rolledBack, hint: 'the new steward-agent did not confirm a heartbeat the control plane answered in time and was rolled back' },
  ROLLBACK_UNHEALTHY: { exit: EXIT.failure, hint: 'the new version failed and the previous one is unhealthy too' },
  ACTIVATION_INTERRUPTED: { exit: EXIT.rolledBack, hint: 'an activation was interrupted and rolled back at the helper start' },
  UNHEALTHY_AFTER_ACTIVATION: { exit: EXIT.rolledBack, hint: 'the version passed its activation, then kept exiting (or its supervisor gave up) within its watch window and was rolled back on the host' },
  ALREADY_ACTIVE: { exit: EXIT.ok, hint: 'that version is already active' },
  DOWNGRADE_AUTHORIZED: { exit: EXIT.ok, hint: 'active below the highest version that was active, by a signed downgrade authorization' },
  JOURNAL_INVALID: { exit: EXIT.failure, hint: 'the app journal is unreadable; `agentctl recover <app>`' },
  FALLBACK: { exit: EXIT.failure, hint: "steward's committed version never got ready 3 starts in a row; the package's version runs instead (`agentctl status steward`)" },
  HANDOVER_TIMEOUT: { exit: EXIT.failure, hint: "the restart a self-update asked systemd for never came; the handover was withdrawn and the old steward version runs on (`journalctl -u steward-helper`)" },
  BAD_REQUEST: { exit: EXIT.failure, hint: 'the helper or the admin API rejected the request as malformed or oversized' },
  FORBIDDEN: { exit: EXIT.refused, hint: 'helper.sock does not allow this; run as root to use admin.sock' },
  UNKNOWN_APP: { exit: EXIT.refused, hint: 'the app is not in /etc/steward/steward.json' },
  NOT_FOUND: { exit: EXIT.failure, hint: 'a named file or version does not exist' },
  CONFIG_INVALID: { exit: EXIT.failure, hint: 'fix the host config named in the message' },
  ROOT_UNSAFE: { exit: EXIT.failure, hint: 'the root prefix, and every folder steward keeps state in or installs into, must be root-owned and not writable by group or others' },
  STATE_INVALID: { exit: EXIT.failure, hint: 'a state file is unreadable or from a newer steward' },
  HELPER_LOCKED: { exit: EXIT.failure, hint: 'another steward-helper already runs for this root' },
  HELPER_UNREACHABLE: { exit: EXIT.unreachable, hint: 'is steward-helper running? `systemctl status steward-helper` says why not; one started by hand prints why it exited on its terminal (run it in the foreground to see)' },
  IO_ERROR: { exit: EXIT.failure, hint: 'a file system operation failed' },
  UNSUPPORTED_COMPRESSION: { exit: EXIT.refused, hint: 'the release is zstd-compressed and this host\'s Node.js has no zstd (22.15 and later have it); run steward on a newer Node.js, or publish a gzip tarball' },
  RECEIPTS_UNRELAYED: { exit: EXIT.refused, hint: 'the receipts steward-agent has not relayed yet fill this app\'s share; nothing changed and no receipt was made: check `systemctl status steward-agent` and its control plane, then try again' },
  USAGE: { exit: EXIT.usage, hint: 'see `agentctl --help`' },
  INTERNAL: { exit: EXIT.failure, hint: 'this is a bug in steward; please report it with the message' },
  AGENT_LOCKED: { exit: EXIT.failure, hint: 'steward-agent (or another enrollment) runs for this root; stop it first (`systemctl stop steward-agent`)' },
  NOT_ENROLLED: { exit: EXIT.failure, hint: 'enroll this node first: `agentctl enroll --control-plane URL --token T`' },
  ALREADY_ENROLLED: { exit: EXIT.refused, hint: 'this node is enrolled already; `agentctl enroll --force` makes a new node key and identity' },
  TOKEN_INVALID: { exit: EXIT.refused, hint: 'the enrollment token is unknown, used or expired; create a new one (`steward-control token create`)' },
  CONTROL_PLANE_UNREACHABLE: { exit: EXIT.unreachable, hint: 'check the control plane URL, the network and the TLS CA (`controlPlane.caFile`)' },
  CONTROL_PLANE_REFUSED: { exit: EXIT.failure, hint: 'the control plane refused the request; its message says why' },
  NEEDS_ROOT: { exit: EXIT.refused, hint: 'run it as root (sudo agentctl ...); nothing was changed' },
  SYSTEMD_UNAVAILABLE: { exit: EXIT.failure, hint: 'steward installs as systemd units; this host (or container) was not booted with systemd' },
  SYSTEM_COMMAND_FAILED: { exit: EXIT.failure, hint: 'a systemd tool failed; its output is in the message, and `journalctl -xe` may say more' },
  RELEASE_EXISTS: { exit: EXIT.refused, hint: 'a version in the catalog never changes: publish a new version (or --resign to sign the same bytes with another allowed key)' },
  OPERATOR_EXISTS: { exit: EXIT.refused, hint: 'an operator of that name exists; `steward-control operator rotate NAME` gives it a new token, `operator remove NAME` removes it' },
  UNAUTHENTICATED: { exit: EXIT.refused, hint: 'set STEWARD_CONTROL_TOKEN to your operator token (`steward-control operator add NAME --role R`, or `operator rotate NAME`, on the server host prints one)' },
  TARGET_NOT_EMPTY: { exit: EXIT.refused, hint: 'restore and copy write only into an empty database (SQLite: a file that does not exist yet; PostgreSQL: a database without steward data) and a tarball folder without other tarballs of the same names; nothing was written' },
  OUTPUT_EXISTS: { exit: EXIT.refused, hint: 'the backup file exists; pick another --out, or pass --force to replace it (only once the new backup is complete)' },
  BACKUP_INVALID: { exit: EXIT.failure, hint: 'the backup file is truncated, corrupt, altered, not signed by the backup key given to restore --key, holds a row its columns cannot hold, or is not a steward-control backup; nothing was restored: use another copy of the backup, or the backup key that signed it' },
  TARGET_CONFLICT: { exit: EXIT.refused, hint: 'another target of the app selects the same node at the same --priority; give one a higher --priority or narrow a --select' },
  HOOK_EXISTS: { exit: EXIT.refused, hint: 'a hook of that name exists; `steward-control hook list` shows it, `hook remove NAME` removes it (and its queued events)' },
  HOOK_DELIVERY_FAILED: { exit: EXIT.failure, hint: "the hook's receiver did not answer 2xx in time (down, slow, an error, or a redirect, which is never followed); the message says which; queued events are tried again with backoff" },
  ANALYSIS_FAILED: { exit: EXIT.refused, hint: "a step's canaries did worse than the nodes still on the old version (the halt reason names the signal and both cohorts' figures); fix the release, or `rollout start` again with --analysis observe if the analysis is wrong (docs/control-plane.md)" },
  ANALYSIS_INCONCLUSIVE: { exit: EXIT.refused, hint: 'too little data to judge a step (too few nodes, requests or minutes); `rollout resume APP` (or `target resume NAME`) lets the next step go, `rollout stop APP` ends the run' },
  NOTHING_TO_RETRY: { exit: EXIT.refused, hint: 'every node of that rollout confirmed or already runs the version; `rollout status` shows the nodes behind, `rollout retry --behind` asks them' },
};

// The exit code for an error with this reason code.
export function exitCodeFor(code: ReasonCode): number {
  return TEXT[code]?.exit ?? (isNothingChanged(code) ? EXIT.refused : EXIT.failure);
}

// The operator's one-line explanation of a reason code.
export function hintFor(code: ReasonCode): string {
  return TEXT[code]?.hint ?? '';
}

// Every code with its exit code and hint, for docs/reason-codes.md and `agentctl --help`.
export function reasonTable(): Array<{ code: ReasonCode; exit: number; hint: string }> {
  return (Object.keys(TEXT) as ReasonCode[]).map((code) => ({ code, ...(TEXT[code] as { exit: number; hint: string }) }));
}

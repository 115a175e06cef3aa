// The closed set of reason codes. docs/design.md §4 lists the transaction's codes; the
// rest name failures of the local API, the CLI and the host itself.
export const REFUSAL_CODES = [
  'BUSY',
  'RECOVERING',
  'HELD',
  'BLOCKED',
  'QUARANTINED',
  'DOWNGRADE_REFUSED',
  'DISK_FULL',
  'WINDOW_CLOSED',
  'HANDOVER',
] as const;

export const RELEASE_PROBLEM_CODES = [
  'INTEGRITY_MISMATCH',
  'SIGNATURE_INVALID',
  'MANIFEST_EXPIRED',
  'UNSAFE_ARCHIVE',
  'RELEASE_INVALID',
  'FETCH_FAILED',
  // Under TUF (docs/design.md §21): metadata a refresh refuses, and an update the trusted metadata does not vouch for.
  'TRUST_ROLLBACK', // metadata older than what this host trusts (a freeze or a metadata rollback)
  'TRUST_EXPIRED', // the trusted metadata (or the metadata offered) has expired
  'TRUST_SIGNATURE', // metadata not signed by a threshold of its role's keys
  'TRUST_MISMATCH', // metadata that is not what the timestamp or snapshot names (mix-and-match)
  'TRUST_TOO_LARGE', // a metadata file over its cap (endless data)
  'TRUST_INVALID', // metadata that is malformed, or a trust root that cannot be used
  'TRUST_UNSIGNED', // the manifest (or index) is not the target the app's delegation signs
  'TRUST_NOT_DIRECTED', // no directive of the root's director for this node, app, version and attempt
] as const;

// Trust refusals a rollout counts against the host, not the release (docs/design.md §21.5). On the
// update path each comes from the host's own state: TRUST_EXPIRED, its stored metadata expired at
// its clock (it has not fetched a fresh bundle: metadata-stale, or its clock is ahead);
// TRUST_ROLLBACK, its stored metadata no longer agreeing with itself; TRUST_NOT_DIRECTED, no
// directive it takes (an agent too old to ask for one, its clock, a root rotation it missed). The
// node is `refused` and the run goes on, `--max-refused` halting it when a whole fleet is so (the
// repository itself expired, a director the hosts do not trust). Every other TRUST_* code halts a
// run at its first refusal, as any release problem.
export const HOST_TRUST_CODES = ['TRUST_EXPIRED', 'TRUST_ROLLBACK', 'TRUST_NOT_DIRECTED'] as const satisfies readonly (typeof RELEASE_PROBLEM_CODES)[number][];

export const OUTCOME_CODES = [
  'REPLACEMENT_UNHEALTHY',
  'ROLLBACK_UNHEALTHY',
  'ACTIVATION_INTERRUPTED',
  'UNHEALTHY_AFTER_ACTIVATION', // exited or gave up within its watch window after `active`: rolled back (§17)
  'ALREADY_ACTIVE',
  'DOWNGRADE_AUTHORIZED', // active below the highest active version, by a signed downgrade authorization (§18): the message names the key
  'JOURNAL_INVALID',
  'AGENT_UNCONFIRMED', // a new steward-agent confirmed no answered heartbeat in time: rolled back
  'APP_NOT_READY', // a start.ready "fd" version wrote no newline on STEWARD_READY_FD within health.timeoutMs: rolled back (§17)
  'READY_FD_CLOSED', // a start.ready "fd" version closed STEWARD_READY_FD (or exited) without the newline: rolled back (§17)
  'FALLBACK',
  'HANDOVER_TIMEOUT', // a self-update's restart never came: the handover was withdrawn, nothing ran the candidate
] as const;

// Codes that are not part of an update's outcome: a request the helper will not
// take, a host that is misconfigured, a helper that cannot be reached.
export const OPERATIONAL_CODES = [
  'BAD_REQUEST', // malformed, oversized or unknown request on a socket
  'FORBIDDEN', // an op or option this socket may not use
  'UNKNOWN_APP', // the app is not in the host config
  'NOT_FOUND', // a named version or file does not exist
  'CONFIG_INVALID', // the host config does not parse or validate
  'ROOT_UNSAFE', // the root prefix is writable by someone other than root
  'STATE_INVALID', // a state file is unreadable, invalid or from a newer steward
  'HELPER_LOCKED', // another helper holds helper.lock for this root
  'HELPER_UNREACHABLE', // the CLI could not talk to the helper
  'IO_ERROR', // a file system operation failed (other than a full disk)
  'UNSUPPORTED_COMPRESSION', // zstd-compressed bytes (a tarball) on a runtime whose zlib has no zstd (Node before 22.15)
  'RECEIPTS_UNRELAYED', // the app has too many receipts the agent has not relayed: refused without a receipt
  'USAGE', // the command line is wrong
  'INTERNAL', // a bug: the message says where
  // steward-agent and `agentctl enroll`, talking to a control plane:
  'AGENT_LOCKED', // another steward-agent (or enrollment) holds the agent folder's lock
  'NOT_ENROLLED', // the agent folder has no enrollment (run `agentctl enroll`)
  'ALREADY_ENROLLED', // enrollment refused: this node is enrolled (use --force to re-enroll)
  'TOKEN_INVALID', // the control plane refused the enrollment token
  'CONTROL_PLANE_UNREACHABLE', // no usable answer from the control plane (network, TLS, 5xx, malformed)
  'CONTROL_PLANE_REFUSED', // the control plane answered a 4xx other than TOKEN_INVALID
  // `agentctl install` and `uninstall`:
  'NEEDS_ROOT', // the command changes the host and must run as root
  'SYSTEMD_UNAVAILABLE', // PID 1 is not systemd, so there is no systemctl to talk to
  'SYSTEM_COMMAND_FAILED', // systemctl, systemd-sysusers or systemd-tmpfiles exited non-zero
  // steward-control:
  'NOTHING_TO_RETRY', // `rollout retry` found no node left to ask
  'RELEASE_EXISTS', // `release add` of a version already in the catalog with other bytes or key
  'OPERATOR_EXISTS', // `operator add` of a name that is taken
  'UNAUTHENTICATED', // the admin API got no operator token (or session), or one that names nobody
  'TARGET_NOT_EMPTY', // `restore` or `copy` into a database (or tarball folder) that holds data
  'OUTPUT_EXISTS', // `backup --out F` where F exists (without --force)
  'TARGET_CONFLICT', // `target set` of a target that selects a node another target of the app selects at the same --priority
  'BACKUP_INVALID', // a backup file that is truncated, corrupt, altered, unsigned or not a steward-control backup
  'HOOK_EXISTS', // `hook add` of a name that is taken
  'HOOK_DELIVERY_FAILED', // a hook's receiver did not acknowledge an event (down, slow, not 2xx, a redirect): `hook test`, a delivery's last error
  // A run's halt and pause reasons from its automated analysis (docs/design.md §19):
  'ANALYSIS_FAILED', // an enforced analysis found a step's canaries worse than the baseline: the run halted
  'ANALYSIS_INCONCLUSIVE', // an enforced analysis had too little data to judge a step: the run paused
] as const;

export type RefusalCode = (typeof REFUSAL_CODES)[number];
export type ReleaseProblemCode = (typeof RELEASE_PROBLEM_CODES)[number];
export type OutcomeCode = (typeof OUTCOME_CODES)[number];
export type OperationalCode = (typeof OPERATIONAL_CODES)[number];
export type ReasonCode = RefusalCode | ReleaseProblemCode | OutcomeCode | OperationalCode;

export const REASON_CODES: readonly ReasonCode[] = [
  ...REFUSAL_CODES,
  ...RELEASE_PROBLEM_CODES,
  ...OUTCOME_CODES,
  ...OPERATIONAL_CODES,
];

const codeSet = new Set<string>(REASON_CODES);

// Whether a string is one of the closed reason codes.
export function isReasonCode(value: unknown): value is ReasonCode {
  return typeof value === 'string' && codeSet.has(value);
}

// Codes that mean the helper took no decision on an attempt and made no receipt for it, so
// that its attemptId stays open and the agent asks again at its next heartbeat: a helper not
// reached, one still recovering, one handing over to another steward version (docs/design.md §14), and
// one whose app has no room left for a receipt until the agent relays what waits.
export const UNDECIDED_CODES: ReadonlySet<ReasonCode> = new Set<ReasonCode>(['HELPER_UNREACHABLE', 'RECOVERING', 'HANDOVER', 'RECEIPTS_UNRELAYED']);

// Whether a code means "nothing changed": a refusal or a problem with the release.
export function isNothingChanged(code: ReasonCode): boolean {
  return (
    (REFUSAL_CODES as readonly string[]).includes(code) ||
    (RELEASE_PROBLEM_CODES as readonly string[]).includes(code)
  );
}

export interface StewardErrorDetails {
  attemptId?: string;
  [key: string]: unknown;
}

// The one error type of steward: a closed reason code, a message naming the app,
// version or path involved, and the original error as `cause`.
export class StewardError extends Error {
  readonly code: ReasonCode;
  readonly details: StewardErrorDetails;

  constructor(code: ReasonCode, message: string, options: { cause?: unknown; details?: StewardErrorDetails } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'StewardError';
    this.code = code;
    this.details = options.details ?? {};
  }
}

// Wraps anything thrown into a StewardError, keeping a StewardError as it is.
export function toStewardError(err: unknown, fallback: ReasonCode = 'INTERNAL', context?: string): StewardError {
  if (err instanceof StewardError) return err;
  const e = err as NodeJS.ErrnoException | undefined;
  if (e && (e.code === 'ENOSPC' || e.code === 'EDQUOT')) {
    return new StewardError('DISK_FULL', `${context ? context + ': ' : ''}no space left on device`, { cause: err });
  }
  const message = e instanceof Error ? e.message : String(err);
  return new StewardError(fallback, context ? `${context}: ${message}` : message, { cause: err });
}

// Whether `err`, or an error it was caused by, is a full disk: ENOSPC or EDQUOT, or DISK_FULL.
export function isDiskFull(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof StewardError ? e.code === 'DISK_FULL' : ['ENOSPC', 'EDQUOT'].includes((e as NodeJS.ErrnoException).code ?? '')) return true;
  }
  return false;
}

// Truncates a message to at most `maxBytes` UTF-8 bytes without splitting a character.
export function truncateUtf8(message: string, maxBytes = 512): string {
  const buf = Buffer.from(message, 'utf8');
  if (buf.length <= maxBytes) return message;
  let end = maxBytes - 3;
  while (end > 0 && ((buf[end] ?? 0) & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8') + '...';
}

// The name rules as plain regular expressions, without zod: modules on agentctl's start-up path
// (core/paths, the protocol client) check names with these, so `agentctl status` need not load
// zod (~100 ms of CPU here, a third of its run; see bench/status-cli). names.ts builds its zod
// schemas from these same expressions.

// The app the agent itself is installed as (issue 6): its releases are only ever signed ones.
export const AGENT_APP = 'steward-agent';

// App names become folder names and unit names (`steward-app-<app>`): lowercase
// letters, digits, `-` and `_`, starting with a letter or digit.
export const APP_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;
// The receipts of apps not in the host config (a request naming one is refused UNKNOWN_APP)
// share one receipts file under this name, which no app can have (it starts with `_`): a caller
// naming made-up apps makes one bounded file, never one file per name.
export const UNKNOWN_APPS_RECEIPTS = '_unknown-apps';
export const ATTEMPT_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
// Exactly one SRI token with a sha512 digest (64 bytes, 88 base64 characters).
export const INTEGRITY_RE = /^sha512-[A-Za-z0-9+/]{86}==$/;
// metrics.textfile of the host config (docs/design.md §12): an absolute path to a <name>.prom file, the
// only files node_exporter's textfile collector reads.
export const TEXTFILE_RE = /^\/[^\0]*[^/\0]\.prom$/;

// Whether a string is a valid app name.
export function isAppName(value: unknown): value is string {
  return typeof value === 'string' && APP_NAME_RE.test(value);
}

// A host name as RFC 1123 §2.1 has it (docs/design.md §12): dot-separated labels of ASCII letters,
// digits and `-`, each 1 to 63 characters, neither starting nor ending with `-`; 253 characters
// at most in all; no trailing dot. Enrollment refuses any other: the name is shown to operators
// (CLI, dashboard) and must never carry markup, blanks or control characters.
export const HOSTNAME_RE = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
export const HOSTNAME_RULE = 'an RFC 1123 host name: labels of letters, digits and "-" (1 to 63 characters, not starting or ending with "-"), separated by dots, at most 253 characters';

// Whether a string is an RFC 1123 host name.
export function isHostname(value: unknown): value is string {
  return typeof value === 'string' && HOSTNAME_RE.test(value);
}

// Whether a URL's hostname (or a host of host:port) is a loopback address. Here rather than in
// release-schemas.ts so that the agent's start-up path need not load zod (issue 8, row 5).
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

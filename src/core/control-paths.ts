// The control plane's endpoints (docs/design.md §6, the contract is control-api.ts), apart from the
// schemas so that the agent's heartbeat path can name them without loading zod (issue 8, row 5).
export const ENROLL_PATH = '/v1/enroll';
export const HEARTBEAT_PATH = '/v1/heartbeat';
export const ARTIFACTS_PREFIX = '/v1/artifacts/';
// The wake-up long poll (docs/design.md §18): answered when the node's desired set changes.
export const WAIT_PATH = '/v1/wait';
// The largest body either POST accepts (docs/design.md §6: over 1 MiB is a 400).
export const MAX_BODY_BYTES = 1024 * 1024;

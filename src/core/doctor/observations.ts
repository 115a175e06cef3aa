// What `agentctl doctor` gathers from the host (src/cli/doctor/gather.ts) and the pure checks
// judge (the other files of this folder). Plain data: tests build it by hand.

export type EntryType = 'file' | 'dir' | 'symlink' | 'socket' | 'other';

// One lstat of a path.
export interface Entry {
  path: string;
  type: EntryType;
  uid: number;
  gid: number;
  // Permission bits only (& 0o7777).
  mode: number;
}

// Who should own what. In production root is uid 0 and steward is the `steward` account; under a
// root prefix (tests, demos) the current user stands in for both, and `note` says so.
export interface Owners {
  rootUid: number;
  // The agent's user; null when that account does not exist (then `accountProblem` says so).
  stewardUid: number | null;
  // The group of helper.sock, /run/steward and the receipts; null: not checked (`note` says why).
  stewardGid: number | null;
  // '' in production; else why ownership expectations differ.
  note: string;
  // In production: the missing `steward` user or group, '' when both exist.
  accountProblem: string;
}

// The walk of the trees root reads (etc/steward, opt/steward, var/lib/steward).
export interface TreeWalk {
  roots: string[];
  entries: Entry[];
  // Set when the walk stopped at its cap before seeing everything.
  capped: boolean;
  cap: number;
  // Paths that could not be read (readdir or lstat failed), with the reason.
  unreadable: Array<{ path: string; error: string }>;
}

// Either a value or why there is none.
export type Probe<T> = ({ ok: true } & T) | { ok: false; error: string };

export type UnitsObservation =
  | { kind: 'skipped'; why: string }
  | { kind: 'no-systemd'; why: string }
  | { kind: 'observed'; units: Array<{ name: string; activeState: string }> };

// What the helper says of the app steward (its status answer's `self`).
export interface SelfObservation {
  version: string;
  decision: string | null;
  fallback: string | null;
  packageReverted: string | null;
}

export interface SocketsObservation {
  helperSock: Entry | null;
  adminSock: Entry | null;
  // self: the app steward's, when the host config has it (runner `self`, the package's).
  status: Probe<{ socket: string; pid: number; recovering: boolean; self?: SelfObservation }>;
}

// A parsed key file: `rawPublicKey` is the hex of the 32-byte Ed25519 public key.
export type KeyFile = { state: 'missing' } | { state: 'invalid'; error: string } | { state: 'ok'; rawPublicKey: string };
export type NodeIdFile = { state: 'missing' } | { state: 'invalid'; error: string } | { state: 'ok'; nodeId: string };
// The agent's enrollment.json: also the control plane it enrolled with.
export type EnrollmentRecord = { state: 'missing' } | { state: 'invalid'; error: string } | { state: 'ok'; nodeId: string; controlPlaneUrl: string };

// The agent's control-plane.json: the URLs it enrolled with and the one that last answered.
export type ControlPlaneRecord = { state: 'missing' } | { state: 'invalid'; error: string } | { state: 'ok'; urls?: readonly string[]; answered?: ControlPlaneAnswered };
export interface ControlPlaneAnswered {
  url: string;
  since: number;
}

export interface KeysObservation {
  helperKeyFile: string;
  helperPubFile: string;
  helperKey: KeyFile;
  helperPub: KeyFile;
  // Each *.pub (or a folder none of whose keys is trusted) and why the helper ignores it, or null.
  trustedKeys: Array<{ file: string; error: string | null }>;
  // Whether a TUF root is stored (the scheme is `tuf`, docs/design.md §21.3): then the agent's
  // updates, steward's own among them, are held to the fleet's metadata, not to these keys.
  tufRoot?: boolean;
  nodeStateFile: string;
  enrollmentFile: string;
  nodeState: NodeIdFile;
  enrollment: EnrollmentRecord;
  controlPlaneFile: string;
  controlPlane: ControlPlaneRecord;
}

export type ConfigObservation = Probe<{
  file: string;
  apps: Array<{ name: string; runner: string }>;
  controlPlane: { url: string | readonly string[]; caFile?: string | undefined; insecure?: boolean | undefined } | null;
  // The CA files the config names: the helper's fetches read fetch.caFile as root.
  caFiles: Array<{ setting: CaSetting; file: string }>;
  diskReserveBytes: number;
}> & {
  file: string;
};

export type CaSetting = 'fetch.caFile' | 'controlPlane.caFile';

// One CA file read through the trust rule (platform/trusted-file.ts).
export type CaFileObservation = { setting: CaSetting; file: string } & ({ state: 'ok' } | { state: 'missing' } | { state: 'untrusted'; why: string });

export type NtpObservation = { state: 'synced' } | { state: 'not-synced' } | { state: 'unavailable'; why: string };

// `from`: the file the control plane's URL came from when it is not the host config (the agent's
// control-plane.json or enrollment.json, when the config has no controlPlane). `status`: the HTTP
// status, when the control plane answered (without a usable Date header, for `unreachable`).
export type SkewObservation =
  | { state: 'no-control-plane' }
  | { state: 'unreachable'; url: string; why: string; from?: string; status?: number }
  // skewMs: the control plane's clock minus ours (positive: ours is behind).
  | { state: 'measured'; url: string; skewMs: number; from?: string; status?: number };

export type ControlPlaneProbe = Exclude<SkewObservation, { state: 'no-control-plane' }>;

// One probe per control-plane URL, in the order the agent tries them; `answered`: the URL the
// agent is on, the last that answered it (its control-plane.json); `recordError`: why that file
// could not be read.
export type ControlPlanesObservation =
  | { state: 'none' }
  | { state: 'probed'; probes: ControlPlaneProbe[]; from?: string; answered?: ControlPlaneAnswered; recordError?: string };

export interface DiskObservation {
  // The steward folder the space is for (/opt/steward, /var/lib/steward), as an operator names it.
  label: string;
  dir: string;
  space: Probe<{ freeBytes: number; totalBytes: number }>;
}

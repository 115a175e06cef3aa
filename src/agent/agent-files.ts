// The agent's folder (docs/design.md §2): /var/lib/steward-agent/, 0700, owned by the user the agent
// runs as. Every file in it is versioned JSON (or the node key's PEM), replaced atomically.
import type { KeyObject } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StewardError, toStewardError } from '../core/errors.js';
import type { HostPaths } from '../core/paths.js';
import { ensureDir, readRegularFile, writeFileAtomic, writeJsonAtomic } from '../platform/fs-atomic.js';
import { parsePrivateKey } from '../platform/keys.js';
import { readVersionedJson } from '../platform/versioned-file.js';
import { CONTROL_PLANE_SCHEMA_VERSION, controlPlaneFileSchema, type ControlPlaneFile } from './agent-file-schemas.js';
import { ENROLLMENT_SCHEMA_VERSION, enrollmentFileSchema, type EnrollmentFile } from './enrollment-schema.js';

export interface AgentFiles {
  dir: string;
  nodeKey: string;
  enrollment: string;
  seq: string;
  outbox: string;
  acted: string;
  controlPlane: string;
  lock: string;
}

// The files of the agent's folder under a host layout.
export function agentFiles(paths: HostPaths): AgentFiles {
  const dir = paths.agentDir;
  return {
    dir,
    nodeKey: path.join(dir, 'node.key'),
    enrollment: path.join(dir, 'enrollment.json'),
    seq: path.join(dir, 'seq.json'),
    outbox: path.join(dir, 'outbox.json'),
    acted: path.join(dir, 'acted.json'),
    controlPlane: path.join(dir, 'control-plane.json'),
    lock: path.join(dir, 'agent.lock'),
  };
}

// Creates the agent folder (0700) if missing and checks that this process owns it: the node
// key inside must be readable by nobody else.
export async function ensureAgentDir(files: AgentFiles): Promise<void> {
  try {
    await ensureDir(files.dir, 0o700);
    const st = await fsp.lstat(files.dir);
    const uid = process.geteuid?.() ?? st.uid;
    if (st.uid !== uid) throw new StewardError('STATE_INVALID', `${files.dir}: owned by uid ${st.uid}, not this agent's uid ${uid}`);
  } catch (err) {
    throw toStewardError(err, 'IO_ERROR', `cannot prepare the agent folder ${files.dir}`);
  }
}

export { ENROLLMENT_SCHEMA_VERSION, type EnrollmentFile } from './enrollment-schema.js';

// enrollment.json, or null before enrollment; invalid or newer is STATE_INVALID.
export function readEnrollment(files: AgentFiles): Promise<EnrollmentFile | null> {
  return readVersionedJson(files.enrollment, ENROLLMENT_SCHEMA_VERSION, enrollmentFileSchema, 64 * 1024);
}

// Writes enrollment.json (0600, atomic replace).
export async function writeEnrollment(files: AgentFiles, value: Omit<EnrollmentFile, 'schemaVersion'>): Promise<void> {
  await writeJsonAtomic(files.enrollment, { schemaVersion: ENROLLMENT_SCHEMA_VERSION, ...value }, 0o600);
}

// control-plane.json, or null when absent; invalid or newer is STATE_INVALID.
export function readControlPlaneFile(files: AgentFiles): Promise<ControlPlaneFile | null> {
  return readVersionedJson(files.controlPlane, CONTROL_PLANE_SCHEMA_VERSION, controlPlaneFileSchema, 64 * 1024);
}

// Writes control-plane.json (0600, atomic replace).
export async function writeControlPlaneFile(files: AgentFiles, value: Omit<ControlPlaneFile, 'schemaVersion'>): Promise<void> {
  await writeJsonAtomic(files.controlPlane, { schemaVersion: CONTROL_PLANE_SCHEMA_VERSION, ...value }, 0o600);
}

// Writes node.key (0600, atomic replace). Only the agent's own user ever calls this.
export async function writeNodeKey(files: AgentFiles, privatePem: string): Promise<void> {
  await writeFileAtomic(files.nodeKey, privatePem, 0o600);
}

// Reads node.key: it must be a regular file of this user, mode 0600 (no group or other bits),
// holding an Ed25519 private key; anything else is STATE_INVALID. Absent is NOT_ENROLLED.
export async function readNodeKey(files: AgentFiles): Promise<KeyObject> {
  let got;
  try {
    got = await readRegularFile(files.nodeKey, 16 * 1024);
  } catch (err) {
    throw new StewardError('STATE_INVALID', `${files.nodeKey}: ${(err as Error).message}`, { cause: err });
  }
  if (!got) throw new StewardError('NOT_ENROLLED', `${files.nodeKey} does not exist: this node is not enrolled`);
  const uid = process.geteuid?.() ?? got.uid;
  if (got.uid !== uid) throw new StewardError('STATE_INVALID', `${files.nodeKey}: owned by uid ${got.uid}, not ${uid}`);
  if ((got.mode & 0o077) !== 0) throw new StewardError('STATE_INVALID', `${files.nodeKey}: mode ${got.mode.toString(8)} lets group or others read the node key (want 600)`);
  try {
    return parsePrivateKey(got.bytes);
  } catch (err) {
    throw new StewardError('STATE_INVALID', `${files.nodeKey}: not an Ed25519 private key in PEM`, { cause: err });
  }
}

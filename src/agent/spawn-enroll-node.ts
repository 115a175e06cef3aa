// The root side of enrollment: runs `steward-agent enroll-node` as the agent's user, so the
// node key is made, used and stored only by that user (DESIGN §6). Root never reads it and
// never writes inside the agent's folder.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { StewardError, isReasonCode } from '../core/errors.js';
import type { HostPaths } from '../core/paths.js';
import { packageRoot } from '../platform/own-version.js';
import { lookupUser } from '../platform/users.js';
import { enrollResultSchema, type EnrollRequest, type EnrollResult } from './enroll.js';

export const AGENT_USER = 'steward';

export interface AgentIdentity {
  // null: the current user (a root prefix, or not root).
  uid: number | null;
  gid: number | null;
  name: string;
}

// Who runs the agent: as root in production (no prefix), the `steward` user, which must exist;
// under a root prefix or without root, the current user (tests, the demo).
export async function agentIdentity(paths: HostPaths): Promise<AgentIdentity> {
  if (process.getuid?.() !== 0 || paths.root !== '') return { uid: null, gid: null, name: 'current user' };
  const u = await lookupUser(AGENT_USER);
  if (!u) throw new StewardError('CONFIG_INVALID', `there is no user ${AGENT_USER} to run steward-agent as (\`agentctl install\` creates it)`);
  if (u.uid === 0) throw new StewardError('CONFIG_INVALID', `user ${AGENT_USER} is uid 0; the agent never runs as root`);
  return { uid: u.uid, gid: u.gid, name: AGENT_USER };
}

// As root, creates the agent folder for its user: 0700, owned by it. Its parent is root's, so
// creating and chowning the fresh folder races no one; an existing one must already be theirs.
export async function prepareAgentDir(paths: HostPaths, who: AgentIdentity): Promise<void> {
  if (who.uid === null || who.gid === null) return;
  await fsp.mkdir(path.dirname(paths.agentDir), { recursive: true, mode: 0o755 });
  try {
    await fsp.mkdir(paths.agentDir, { mode: 0o700 });
    await fsp.chown(paths.agentDir, who.uid, who.gid);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const st = await fsp.lstat(paths.agentDir);
  if (!st.isDirectory() || st.uid !== who.uid) {
    throw new StewardError('STATE_INVALID', `${paths.agentDir} must be a folder owned by ${who.name} (uid ${who.uid}), found uid ${st.uid}`);
  }
}

// Runs the agent user's half and returns its result; its logs go to this process's stderr.
export async function spawnEnrollNode(paths: HostPaths, who: AgentIdentity, req: EnrollRequest): Promise<Extract<EnrollResult, { ok: true }>> {
  const pkg = packageRoot();
  if (!pkg) throw new StewardError('INTERNAL', 'cannot find the steward package to run steward-agent from');
  const bin = path.join(pkg, 'bin', 'steward-agent.js');
  const r = await execa(process.execPath, [bin, 'enroll-node', ...(paths.root ? ['--root', paths.root] : [])], {
    input: JSON.stringify(req),
    stdout: 'pipe',
    stderr: 'inherit',
    reject: false,
    cwd: '/',
    ...(who.uid !== null && who.gid !== null ? { uid: who.uid, gid: who.gid } : {}),
  });
  let parsed: EnrollResult | null = null;
  try {
    const lines = String(r.stdout).trim().split('\n');
    const res = enrollResultSchema.safeParse(JSON.parse(lines[lines.length - 1] ?? ''));
    parsed = res.success ? res.data : null;
  } catch {
    parsed = null;
  }
  if (!parsed) throw new StewardError('INTERNAL', `steward-agent enroll-node exited ${r.exitCode ?? r.signal} without a result`);
  if (!parsed.ok) throw new StewardError(isReasonCode(parsed.error.code) ? parsed.error.code : 'INTERNAL', parsed.error.message);
  return parsed;
}

// The root side of enrollment: runs `steward-agent enroll-node` as the agent's user, so the
// node key is made, used and stored only by that user (docs/design.md §6). Root never reads it and
// never writes inside the agent's folder. Root alone reads the helper key: it signs the enroll
// payload the agent user's process made with it, once that payload is the one it asked for.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { spawn } from 'node:child_process';
import { enrollPayloadSchema } from '../core/control-api.js';
import { StewardError, isReasonCode } from '../core/errors.js';
import type { HostPaths } from '../core/paths.js';
import { strictBase64 } from '../platform/keys.js';
import { packageRoot } from '../platform/own-version.js';
import { lookupUser } from '../platform/users.js';
import { enrollProveRequestSchema, enrollResultSchema, type EnrollProveAnswer, type EnrollRequest, type EnrollResult } from './enroll.js';

// What root signs with the helper key: payload bytes P, already checked (signs under
// steward-enroll-helper-v1 and returns the base64 signature).
export type SignEnrollPayload = (payload: Buffer) => string;

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

// Runs the agent user's half and returns its result; its logs go to this process's stderr. The
// two talk in JSON lines: root writes the request; the child may ask once `{prove: base64(P)}`,
// which root answers `{helperSig}` (or `{error}`) after checking that P is an enroll payload for
// this request's token and helper key; the child's last line is its result. Everything the child
// says comes from a less privileged user: each line is bounded and checked.
export async function spawnEnrollNode(paths: HostPaths, who: AgentIdentity, req: EnrollRequest, signPayload: SignEnrollPayload): Promise<Extract<EnrollResult, { ok: true }>> {
  const pkg = packageRoot();
  if (!pkg) throw new StewardError('INTERNAL', 'cannot find the steward package to run steward-agent from');
  const bin = path.join(pkg, 'bin', 'steward-agent.js');
  // node:child_process rather than execa: execa and its packages (~180 KB bundled) were most of
  // what `agentctl enroll` loaded, for one child whose pipes this function reads itself.
  const child = spawn(process.execPath, [bin, 'enroll-node', ...(paths.root ? ['--root', paths.root] : [])], {
    stdio: ['pipe', 'pipe', 'inherit'],
    cwd: '/',
    ...(who.uid !== null && who.gid !== null ? { uid: who.uid, gid: who.gid } : {}),
  });
  // The child's end: its exit code or signal once its pipes are closed, or the error that kept it
  // from starting (then neither).
  const ended = new Promise<{ exitCode: number | null; signal: NodeJS.Signals | null; error?: Error }>((resolve) => {
    child.on('error', (error) => resolve({ exitCode: null, signal: null, error }));
    child.once('close', (exitCode, signal) => resolve({ exitCode, signal }));
  });
  // Why: a child that exits early (ALREADY_ENROLLED) closes its stdin; writing to it then is
  // EPIPE, which must not crash agentctl: the child's result line says what happened.
  child.stdin.on('error', () => {});
  child.stdin.write(JSON.stringify(req) + '\n');
  let last: string | null = null;
  let proved = false;
  try {
    for await (const line of boundedLines(child.stdout, CHILD_LINE_MAX)) {
      const ask = parseLine(line, enrollProveRequestSchema);
      if (ask && !proved) {
        proved = true;
        child.stdin.end(JSON.stringify(proveAnswer(req, ask.prove, signPayload)) + '\n');
        continue;
      }
      last = line;
    }
  } catch (err) {
    child.kill();
    throw new StewardError('INTERNAL', `steward-agent enroll-node: ${(err as Error).message}`, { cause: err });
  } finally {
    if (!child.stdin.writableEnded) child.stdin.end();
  }
  const r = await ended;
  const parsed = last === null ? null : parseLine(last, enrollResultSchema);
  if (!parsed) throw new StewardError('INTERNAL', `steward-agent enroll-node ${r.error ? `did not start: ${r.error.message}` : `exited ${r.exitCode ?? r.signal}`} without a result`);
  if (!parsed.ok) throw new StewardError(isReasonCode(parsed.error.code) ? parsed.error.code : 'INTERNAL', parsed.error.message);
  return parsed;
}

// The child's lines are small JSON objects; the longest is a payload of two PEM keys and a token.
const CHILD_LINE_MAX = 64 * 1024;

// Root's answer to the child's `prove`: a signature only over an enroll payload for the token and
// helper key this enrollment was started with, so the helper key signs nothing else.
function proveAnswer(req: EnrollRequest, b64: string, signPayload: SignEnrollPayload): EnrollProveAnswer {
  const refuse = (message: string): EnrollProveAnswer => ({ error: { code: 'INTERNAL', message: `root refuses to sign the enroll payload with the helper key: ${message}` } });
  const bytes = strictBase64(b64);
  if (!bytes) return refuse('not strict base64');
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    return refuse('not JSON');
  }
  const p = enrollPayloadSchema.safeParse(json);
  if (!p.success) return refuse('not an enroll payload');
  if (p.data.token !== req.token || p.data.helperPublicKey !== req.helperPublicKey) return refuse('not for this enrollment\'s token and helper key');
  return { helperSig: signPayload(bytes) };
}

function parseLine<T>(line: string, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } }): T | null {
  try {
    const r = schema.safeParse(JSON.parse(line));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

// The lines of `stream` ('\n'-terminated, the last one may lack it); throws on a line over `max` bytes.
async function* boundedLines(stream: Readable, max: number): AsyncGenerator<string> {
  let pending = Buffer.alloc(0);
  for await (const chunk of stream) {
    pending = Buffer.concat([pending, chunk as Buffer]);
    let nl: number;
    while ((nl = pending.indexOf(0x0a)) >= 0) {
      if (nl > max) break;
      yield pending.subarray(0, nl).toString('utf8');
      pending = pending.subarray(nl + 1);
    }
    if (pending.length > max) throw new Error(`a line longer than ${max} bytes on stdout`);
  }
  if (pending.length > 0) yield pending.toString('utf8');
}

// The helper's reading of a file the agent writes in its folder (the relay mark, what the control
// plane accepts). The folder is the `steward` user's: the file is hostile input, read by root. It
// is opened with O_NOFOLLOW, must be a regular file of the folder's owner, at most `maxBytes`, and
// must parse as JSON; no byte of it goes into a log line.
import { promises as fsp } from 'node:fs';
import type { HostPaths } from '../../core/paths.js';
import { readRegularFile } from '../../platform/fs-atomic.js';

export type AgentFileRead = { json: unknown } | { problem: string } | null;

// The file's JSON, a problem to log (in words of ours, never the file's), or null when it does not exist.
export async function readAgentJson(paths: HostPaths, file: string, maxBytes = 4096): Promise<AgentFileRead> {
  let got;
  try {
    got = await readRegularFile(file, maxBytes);
  } catch (err) {
    return { problem: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  if (got === null) return null;
  try {
    // Why the owner check: a hard link the agent's user made to a file of root's is not its file.
    if (got.uid !== (await fsp.lstat(paths.agentDir)).uid) return { problem: `is owned by uid ${got.uid}, not by the agent folder's owner` };
  } catch {
    return { problem: 'has no agent folder around it' };
  }
  try {
    return { json: JSON.parse(got.bytes.toString('utf8')) };
  } catch {
    return { problem: 'is not JSON' };
  }
}

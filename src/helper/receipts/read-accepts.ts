// The helper's reading of what the control plane accepts (core/control-plane-accepts.ts), as the
// agent last wrote it: hostile input, read as read-agent-file.ts says. Anything wrong with it
// counts as "nothing said": the helper then signs v1, which every control plane takes.
import { acceptsFile, acceptsFileSchema } from '../../core/control-plane-accepts.js';
import type { HostPaths } from '../../core/paths.js';
import { logger } from '../../platform/log.js';
import { readAgentJson } from './read-agent-file.js';

const log = logger('helper:receipts');
let lastProblem = '';

// The receipt versions the control plane accepts, or null when the agent said nothing (usable).
// `runningAgent`: the version the host's steward-agent app runs now (null when the agent is not a
// steward app here: then the file is taken as it is); a file another agent version wrote is
// nothing said, since the agent running now may not read what that one could.
export async function readAcceptedReceiptVersions(paths: HostPaths, runningAgent: string | null = null): Promise<number[] | null> {
  const file = acceptsFile(paths);
  const read = await readAgentJson(paths, file);
  const problem = (why: string): null => {
    if (why !== lastProblem) log('WARNING: %s %s: receipts are signed as payload v1', file, why);
    lastProblem = why;
    return null;
  };
  if (read === null) return null;
  if ('problem' in read) return problem(read.problem);
  const parsed = acceptsFileSchema.safeParse(read.json);
  if (!parsed.success) return problem('is not a list of accepted receipt versions');
  if (runningAgent !== null && parsed.data.agentVersion !== runningAgent) return problem(`was written by agent ${parsed.data.agentVersion}, and the steward-agent app runs ${runningAgent || 'no valid version'}`);
  lastProblem = '';
  return parsed.data.receiptVersions;
}

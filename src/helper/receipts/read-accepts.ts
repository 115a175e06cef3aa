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
export async function readAcceptedReceiptVersions(paths: HostPaths): Promise<number[] | null> {
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
  lastProblem = '';
  return parsed.data.receiptVersions;
}

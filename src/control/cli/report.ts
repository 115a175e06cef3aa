import { StewardError, toStewardError } from '../../core/errors.js';
import { exitCodeFor } from '../../cli/error-message.js';
import { printJson, shown } from '../../cli/output.js';

// Prints an error for a human (stderr) or a program (stdout JSON) and returns its exit code:
// 2 usage, 3 refused (BUSY, MANIFEST_EXPIRED, RELEASE_INVALID, FORBIDDEN), 1 otherwise.
export function reportControlError(err: unknown, json: boolean): number {
  const e = err instanceof StewardError ? err : toStewardError(err, 'INTERNAL');
  const exit = exitCodeFor(e.code);
  if (json) printJson({ ok: false, error: { code: e.code, message: e.message } });
  else process.stderr.write(`steward-control: ${e.code}: ${shown(e.message)}\n`);
  return exit;
}

// agentctl's entry (the bundle's agentctl.js, which bin/agentctl.js runs): it turns on Node's
// compile cache first and only then loads the program, so that the cache covers every module
// agentctl runs (commander, the command's module, zod) and not just those loaded after it.
import { useCompileCache } from '../platform/compile-cache.js';
import { endQuietlyWhenStdoutCloses } from '../platform/stdout-closed.js';

// Runs agentctl with `argv` and returns its exit code.
export async function runCli(argv: string[]): Promise<number> {
  endQuietlyWhenStdoutCloses();
  await useCompileCache();
  return (await import('./program.js')).runCli(argv);
}

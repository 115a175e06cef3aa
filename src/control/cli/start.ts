// steward-control's entry (the bundle's steward-control.js, which bin/steward-control.js runs): it
// turns on Node's compile cache first (src/platform/compile-cache.ts, the one agentctl uses, under
// the same rule) and only then loads the program, so that the cache covers every module the
// command runs (commander, the store, zod, the server) and not just those loaded after it.
import { EXIT } from '../../cli/error-message.js';
import { useCompileCache } from '../../platform/compile-cache.js';
import { readOwnVersion } from '../../platform/own-version.js';
import { endQuietlyWhenStdoutCloses } from '../../platform/stdout-closed.js';

// Runs steward-control with `argv` and returns its exit code.
export async function runControlCli(argv: string[]): Promise<number> {
  // serve is a daemon: its stdout closing (a terminal gone) must not end it.
  if (!argv.includes('serve')) endQuietlyWhenStdoutCloses();
  // The version alone needs no program: it is answered before commander and the commands load.
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) {
    process.stdout.write(`${readOwnVersion()}\n`);
    return EXIT.ok;
  }
  await useCompileCache();
  return (await import('./main.js')).runControlCli(argv);
}

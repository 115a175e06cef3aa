import { registerReleases } from '../commands/releases.js';
import { runCommand } from '../program-base.js';

// The runner of commands/releases.ts, bundled as a file of its own (src/cli/main.ts).
export const register = registerReleases;
export const runCli = (argv: string[]): Promise<number> => runCommand(argv, registerReleases);

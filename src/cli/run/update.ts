import { registerUpdate } from '../commands/update.js';
import { runCommand } from '../program-base.js';

// The runner of commands/update.ts, bundled as a file of its own (src/cli/main.ts).
export const register = registerUpdate;
export const runCli = (argv: string[]): Promise<number> => runCommand(argv, registerUpdate);

import { registerStatus } from '../commands/status.js';
import { runCommand } from '../program-base.js';

// The runner of commands/status.ts, bundled as a file of its own (src/cli/main.ts).
export const register = registerStatus;
export const runCli = (argv: string[]): Promise<number> => runCommand(argv, registerStatus);

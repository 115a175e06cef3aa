import { registerLogs } from '../commands/logs.js';
import { runCommand } from '../program-base.js';

// The runner of commands/logs.ts, bundled as a file of its own (src/cli/main.ts).
export const register = registerLogs;
export const runCli = (argv: string[]): Promise<number> => runCommand(argv, registerLogs);

import { registerRunState } from '../commands/run-state.js';
import { runCommand } from '../program-base.js';

// The runner of commands/run-state.ts, bundled as a file of its own (src/cli/main.ts).
export const register = registerRunState;
export const runCli = (argv: string[]): Promise<number> => runCommand(argv, registerRunState);

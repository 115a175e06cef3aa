import { registerRollback } from '../commands/rollback.js';
import { runCommand } from '../program-base.js';

// The runner of commands/rollback.ts, bundled as a file of its own (src/cli/main.ts).
export const register = registerRollback;
export const runCli = (argv: string[]): Promise<number> => runCommand(argv, registerRollback);

import { registerMaintenance } from '../commands/maintenance.js';
import { runCommand } from '../program-base.js';

// The runner of commands/maintenance.ts, bundled as a file of its own (src/cli/main.ts).
export const register = registerMaintenance;
export const runCli = (argv: string[]): Promise<number> => runCommand(argv, registerMaintenance);

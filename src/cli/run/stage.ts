import { registerStage } from '../commands/stage.js';
import { runCommand } from '../program-base.js';

// The runner of commands/stage.ts, bundled as a file of its own (src/cli/main.ts).
export const register = registerStage;
export const runCli = (argv: string[]): Promise<number> => runCommand(argv, registerStage);

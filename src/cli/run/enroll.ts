import { registerEnrollAndTrust } from '../commands/enroll.js';
import { runCommand } from '../program-base.js';

// The runner of commands/enroll.ts, bundled as a file of its own (src/cli/main.ts).
export const register = registerEnrollAndTrust;
export const runCli = (argv: string[]): Promise<number> => runCommand(argv, registerEnrollAndTrust);

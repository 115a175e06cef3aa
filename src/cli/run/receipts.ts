import { registerReceipts } from '../commands/receipts.js';
import { runCommand } from '../program-base.js';

// The runner of commands/receipts.ts, bundled as a file of its own (src/cli/main.ts).
export const register = registerReceipts;
export const runCli = (argv: string[]): Promise<number> => runCommand(argv, registerReceipts);

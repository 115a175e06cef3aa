import { registerReceipts } from '../commands/receipts.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/receipts.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ receipts: registerReceipts });

import { registerBackup, registerCopy, registerRestore } from '../commands/backup.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/backup.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ backup: registerBackup, restore: registerRestore, copy: registerCopy });

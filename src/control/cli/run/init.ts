import { registerInit, registerMigrate } from '../commands/init.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/init.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ init: registerInit, migrate: registerMigrate });

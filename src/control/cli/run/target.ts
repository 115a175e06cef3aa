import { registerTarget } from '../commands/target.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/target.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ target: registerTarget });

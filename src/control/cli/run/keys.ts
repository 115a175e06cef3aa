import { registerKeys } from '../commands/keys.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/keys.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ keys: registerKeys });

import { registerToken } from '../commands/token.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/token.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ token: registerToken });

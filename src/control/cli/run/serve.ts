import { registerServe } from '../commands/serve.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/serve.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ serve: registerServe });

import { registerNodes } from '../commands/nodes.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/nodes.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ nodes: registerNodes });

import { registerOperator } from '../commands/operator.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/operator.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ operator: registerOperator });

import { registerRollout } from '../commands/rollout.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/rollout.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ rollout: registerRollout });

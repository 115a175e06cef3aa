import { registerHook } from '../commands/hook.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/hook.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ hook: registerHook });

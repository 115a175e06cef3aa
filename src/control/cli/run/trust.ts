import { registerTrust } from '../commands/trust.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/trust.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ trust: registerTrust });

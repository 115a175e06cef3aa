import { registerAudit } from '../commands/audit.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/audit.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ audit: registerAudit });

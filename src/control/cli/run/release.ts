import { registerRelease } from '../commands/release.js';
import { controlRunner } from '../program-base.js';

// The runner of commands/release.ts, bundled as a file of its own (src/control/cli/start.ts).
export const { commands, runControlCli } = controlRunner({ release: registerRelease });

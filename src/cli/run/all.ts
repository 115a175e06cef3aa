// Every command (program.ts): the runner of help, of a word that names no command, of --version,
// and of the commands without a runner of their own (src/cli/main.ts).
export { runCli } from '../program.js';

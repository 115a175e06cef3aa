// Every command (main.ts): the runner of help, of a word that names no command, and of no command.
export { runControlCli } from '../main.js';

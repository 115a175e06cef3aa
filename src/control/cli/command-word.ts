import { commandWord } from '../../cli/lazy-commands.js';

// steward-control's program options that take their value in the next word.
const VALUE_OPTIONS = new Set(['--db', '--artifacts', '--server', '--ca-file']);

// The command word of `argv`: the first word that is neither a program option nor its value.
// A module of its own, without commander: the entry (start.ts) reads it before loading anything.
export function controlCommandWord(argv: string[]): string | undefined {
  return commandWord(argv, VALUE_OPTIONS);
}

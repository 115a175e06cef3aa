import { commandWord as commandWordOf } from './lazy-commands.js';

// agentctl's global options that take a value in the next word.
const VALUE_OPTIONS = new Set(['--root', '--socket']);

// The command word of `argv`: the first word that is neither a global option nor its value.
// A module of its own, without commander: the entry (main.ts) reads it before loading anything.
export function commandWord(argv: string[]): string | undefined {
  return commandWordOf(argv, VALUE_OPTIONS);
}

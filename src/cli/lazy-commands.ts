import type { Command } from 'commander';

// A command's module, imported only when it is needed: a CLI then loads what the command it runs
// needs, not every other command's modules too. Used by agentctl (src/cli/program.ts) and by
// steward-control (src/control/cli/main.ts).
export type Register = (program: Command) => void;
export type LazyCommand = [names: string[], load: () => Promise<Register>];

// The command word of `argv`: the first word that is neither a global option nor the value of
// one of `valueOptions` (the global options that take their value in the next word).
export function commandWord(argv: string[], valueOptions: ReadonlySet<string>): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (valueOptions.has(a)) i++;
    else if (!a.startsWith('-')) return a;
  }
  return undefined;
}

// Registers on `program` the commands that `word` names, or every command when it names none
// that is known (no command, help, a typo), so that help and commander's errors list them all.
// The order of `commands` is the order of --help.
export async function registerCommands(program: Command, commands: LazyCommand[], word: string | undefined): Promise<void> {
  const named = commands.filter(([names]) => word !== undefined && names.includes(word));
  for (const [, load] of named.length ? named : commands) (await load())(program);
}

// A man page (man(7) roff, section 1 or 8) made from a program's commander definition, so that the
// page says what `--help` says and cannot drift from it (docs/design.md §14): the name and description,
// the options, and every visible subcommand with its arguments, description and options.
import type { Command, Help } from 'commander';

export interface ManPageInfo {
  // The package's version and the page's date (YYYY-MM-DD), printed in the page's header.
  version: string;
  date: string;
  // Other pages to name under SEE ALSO, e.g. ['agentctl(1)'].
  seeAlso: string[];
  // 1 for a user command, 8 for a daemon.
  section: string;
}

// Escapes text for roff: backslashes, hyphens (a plain '-' may print as a hyphen, not a minus),
// and a '.' or "'" that would start a line as a request.
function roff(text: string): string {
  return text.replace(/\\/g, '\\e').replace(/-/g, '\\-').replace(/^([.'])/gm, '\\&$1');
}

// One command's options as a .TP list; commander's -h, --help only for the program itself.
function optionList(help: Help, cmd: Command, withHelp: boolean): string[] {
  const out: string[] = [];
  for (const o of help.visibleOptions(cmd)) {
    if (!withHelp && o.long === '--help') continue;
    out.push('.TP', `.B ${roff(help.optionTerm(o))}`, roff(help.optionDescription(o)));
  }
  return out;
}

function visibleSubcommands(help: Help, cmd: Command): Command[] {
  return help.visibleCommands(cmd).filter((c) => c.name() !== 'help');
}

// The subcommands of `cmd`, each a subsection, depth first.
function commandSections(help: Help, cmd: Command, prefix: string): string[] {
  const out: string[] = [];
  for (const sub of visibleSubcommands(help, cmd)) {
    const term = `${prefix} ${help.subcommandTerm(sub)}`;
    out.push(`.SS "${roff(term).replace(/"/g, '\\(dq')}"`, roff(sub.description()));
    const opts = optionList(help, sub, false);
    if (opts.length) out.push('.PP', 'Options:', '.RS', ...opts, '.RE');
    out.push(...commandSections(help, sub, `${prefix} ${sub.name()}`));
  }
  return out;
}

// The page of `program`, as text to gzip into /usr/share/man/man<section>/<name>.<section>.gz.
export function manPage(program: Command, info: ManPageInfo): string {
  const help = program.createHelp();
  const name = program.name();
  const subs = visibleSubcommands(help, program);
  const lines = [
    `.\\" Generated from the commander definition of ${name} by scripts/package/man-page.ts.`,
    `.TH ${name.toUpperCase()} ${info.section} ${info.date} "steward ${info.version}" "steward"`,
    '.SH NAME',
    `${roff(name)} \\- ${roff(program.description())}`,
    '.SH SYNOPSIS',
    `.B ${roff(name)}`,
    subs.length ? '[\\fIoptions\\fR] \\fIcommand\\fR [\\fIargs\\fR]' : '[\\fIoptions\\fR]',
    '.SH DESCRIPTION',
    roff(program.description()) + '.',
    '.SH OPTIONS',
    ...optionList(help, program, true),
  ];
  if (subs.length) lines.push('.SH COMMANDS', ...commandSections(help, program, name));
  const seeAlso = info.seeAlso.map((s, i) => `.BR ${s.replace(/\((\d)\)$/, ' ($1)')}${i < info.seeAlso.length - 1 ? ',' : ''}`);
  lines.push('.SH SEE ALSO', ...seeAlso, '');
  return lines.join('\n');
}

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO } from './host.js';

// The README's shell examples, for the tests that run them as printed (so the README cannot drift).

// The ```sh blocks of README.md under `heading` (a whole heading line, `### Try it by hand...`),
// up to the next heading of the same or a higher level; with `after`, only those after the line
// that equals it. Throws when there is none: a renamed heading must fail the test, not skip it.
export function readmeShellBlocks(heading: string, after?: string): string[] {
  const lines = readFileSync(path.join(REPO, 'README.md'), 'utf8').split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`README.md has no heading line "${heading}"`);
  const level = /^#+/.exec(heading)?.[0].length ?? 0;
  const blocks: string[] = [];
  let from = start + 1;
  if (after !== undefined) {
    from = lines.indexOf(after, from);
    if (from < 0) throw new Error(`README.md has no line "${after}" under "${heading}"`);
  }
  let block: string[] | null = null;
  for (let i = from; i < lines.length; i++) {
    const line = lines[i] as string;
    if (block) {
      if (line === '```') {
        blocks.push(block.join('\n') + '\n');
        block = null;
      } else block.push(line);
      continue;
    }
    const h = /^(#+) /.exec(line);
    if (h && (h[1] as string).length <= level) break;
    if (line === '```sh') block = [];
  }
  if (blocks.length === 0) throw new Error(`README.md has no sh block under "${heading}"${after ? ` after "${after}"` : ''}`);
  return blocks;
}

// One line of an example: the command, and what the comment after it says it prints.
export interface ExampleLine {
  command: string;
  // The comment's text, '' when there is none.
  prints: string;
}

// The lines of a block of one-line commands, each `command   # what it prints`.
export function exampleLines(block: string): ExampleLine[] {
  return block
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const hash = l.indexOf(' #');
      return hash < 0 ? { command: l.trim(), prints: '' } : { command: l.slice(0, hash).trim(), prints: l.slice(hash + 2).trim() };
    });
}

// A pattern for what a comment says is printed: its parts between `...` in order, every number
// standing for any number (a pid, a uid, a version) and every run of blanks for any blanks.
export function printedPattern(prints: string): RegExp {
  const parts = prints.split('...').map((p) => p.trim()).filter(Boolean);
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\d+/g, '\\d+').replace(/\s+/g, '\\s+');
  return new RegExp(parts.map(esc).join('[\\s\\S]*'));
}

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { REPO } from '../helpers/host.js';
import { BUNDLE_DIR, PROGRAMS } from '../../scripts/bundle.js';

// The parts of docs/design.md §15 and who may import them. Every import of the code (static, dynamic
// `import()`, `export ... from`, a type's `import('...')`; type-only ones too: they tie the
// parts' code together as much as a value does) is held to this list. docs/layout.md shows the
// same table (the last test below keeps the two together).
type Part = 'core' | 'platform' | 'protocol' | 'host' | 'helper' | 'agent' | 'install' | 'cli' | 'control' | 'ui' | 'entry';

interface Rule {
  part: Part;
  // Where the part's files are, relative to the repository.
  dirs: string[];
  // The parts it may import, besides itself.
  imports: Part[];
  // Single files of another part it may import, beyond `imports`: what the part shares with
  // that one, named so that the rest of that part stays out of reach.
  files?: string[];
  why: string;
}

const PARTS: Rule[] = [
  { part: 'core', dirs: ['src/core'], imports: [], why: 'pure logic, from anyone' },
  { part: 'platform', dirs: ['src/platform'], imports: ['core'], why: 'one adapter per side effect, for the programs' },
  { part: 'protocol', dirs: ['src/protocol'], imports: ['core'], why: 'the local API: requests, answers, progress, the typed client' },
  { part: 'host', dirs: ['src/host'], imports: ['core', 'platform'], why: 'the host files several programs read: host config, helper key, node id' },
  { part: 'helper', dirs: ['src/helper'], imports: ['core', 'platform', 'protocol', 'host'], why: 'steward-helper; no cli, agent or control code' },
  { part: 'agent', dirs: ['src/agent'], imports: ['core', 'platform', 'protocol', 'host'], why: 'steward-agent; no helper code' },
  {
    part: 'install',
    dirs: ['src/install'],
    imports: ['core', 'platform', 'host'],
    files: ['src/helper/stage/', 'src/helper/release-store.ts', 'src/helper/state/app-state.ts', 'src/helper/update/swap.ts', 'src/helper/self/self-files.ts', 'src/helper/self/trial-steps.ts'],
    why: "`agentctl install`; stages the agent's release with the helper's staging code, and forgets a reverted package trial with the helper's own self-update files",
  },
  {
    part: 'cli',
    dirs: ['src/cli'],
    imports: ['core', 'platform', 'protocol', 'host', 'install', 'agent'],
    why: "agentctl; no helper code. `enroll` is the root side of the agent's enrollment, `doctor` reads the agent's folder",
  },
  {
    part: 'control',
    dirs: ['src/control'],
    imports: ['core', 'platform', 'install'],
    files: ['src/cli/output.ts', 'src/cli/error-message.ts', 'src/cli/exit-code.ts', 'src/cli/lazy-commands.ts'],
    why: "steward-control; its CLI prints, exits and loads its commands as agentctl does, and packs the agent's release as install does",
  },
  { part: 'ui', dirs: ['src/ui'], imports: [], why: "the dashboard's browser code (tsconfig.ui.json); it runs in the page and takes the server's answers as JSON" },
  { part: 'entry', dirs: ['bin', 'scripts'], imports: ['core', 'platform', 'protocol', 'host', 'helper', 'agent', 'install', 'cli', 'control'], why: 'launchers and scripts' },
];

const SOURCE = /\.(ts|js)$/;

function walk(dir: string, out: string[]): string[] {
  let names: string[];
  try {
    names = readdirSync(path.join(REPO, dir)).sort();
  } catch {
    return out;
  }
  for (const name of names) {
    const rel = path.posix.join(dir, name);
    if (statSync(path.join(REPO, rel)).isDirectory()) walk(rel, out);
    else if (SOURCE.test(name) && !name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

// Every module specifier in `text`, with its line (1-based).
function importsOf(file: string, text: string): Array<{ line: number; spec: string }> {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('.js') ? ts.ScriptKind.JS : ts.ScriptKind.TS);
  const out: Array<{ line: number; spec: string }> = [];
  const add = (node: ts.Node | undefined) => {
    if (node && ts.isStringLiteralLike(node)) out.push({ line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, spec: node.text });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) add(node.moduleReference.expression);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0]);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

// A launcher imports its program's bundle (scripts/bundle.ts): dist/bundle/<program>/<program>.js
// stands for the program's entry module, so the launcher is held to the rules as if it imported that.
const BUNDLE_ENTRIES = new Map(PROGRAMS.map((p) => [`${BUNDLE_DIR}/${p.name}/${p.name}.js`, p.entry]));

// The repository file a relative specifier of `from` names (a launcher's `../dist/src/x.js` is
// src/x.ts, its `../dist/bundle/agentctl/agentctl.js` src/cli/main.ts), or null for a package or
// a built-in.
function targetOf(from: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  let t = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  t = BUNDLE_ENTRIES.get(t) ?? t;
  if (t.startsWith('dist/')) t = t.slice('dist/'.length);
  return t.replace(/\.js$/, '.ts');
}

function partOf(file: string): Rule | undefined {
  return PARTS.find((r) => r.dirs.some((d) => file.startsWith(d + '/')));
}

function allowed(from: Rule, target: string): boolean {
  const to = partOf(target);
  if (!to) return false;
  if (to === from || from.imports.includes(to.part)) return true;
  return (from.files ?? []).some((f) => (f.endsWith('/') ? target.startsWith(f) : target === f));
}

const CODE = ['src', 'bin', 'scripts'].flatMap((d) => walk(d, []));

test('every source file belongs to one part of docs/design.md §15', () => {
  const orphans = CODE.filter((f) => !partOf(f));
  assert.deepEqual(orphans, [], `files in no part: ${orphans.join(', ')}`);
});

test('no part imports across a line docs/design.md §15 forbids', () => {
  const violations: string[] = [];
  let seen = 0;
  for (const file of CODE) {
    const from = partOf(file);
    if (!from) continue;
    for (const { line, spec } of importsOf(file, readFileSync(path.join(REPO, file), 'utf8'))) {
      const target = targetOf(file, spec);
      if (target === null) continue;
      seen++;
      if (!allowed(from, target)) violations.push(`${file}:${line} -> ${target} (${from.part} may not import ${partOf(target)?.part ?? 'a file in no part'})`);
    }
  }
  assert.ok(seen > 500, `only ${seen} relative imports found: the walk missed the code`);
  assert.deepEqual(violations, [], `${violations.length} imports across a forbidden line:\n${violations.join('\n')}`);
});

test('the import parser sees static, dynamic, re-exported and type imports', () => {
  const text = [
    "import a from './a.js';",
    "import type { B } from './b.js';",
    "export { c } from './c.js';",
    "const d = await import('./d.js');",
    "type E = import('./e.js').E;",
    "import './f.js';",
  ].join('\n');
  assert.deepEqual(
    importsOf('x.ts', text).map((i) => `${i.line}:${i.spec}`),
    ['1:./a.js', '2:./b.js', '3:./c.js', '4:./d.js', '5:./e.js', '6:./f.js'],
  );
});

// docs/layout.md's table, as this file's list renders it.
function partsTable(): string {
  const rows = PARTS.map((r) => {
    const may = [...r.imports, ...(r.files ?? []).map((f) => `\`${f}\``)];
    return `| \`${r.part}\` | ${r.dirs.map((d) => `\`${d}/\``).join(' ')} | ${may.length ? may.join(', ') : '(nothing)'} | ${r.why} |`;
  });
  return ['| part | where | may import, besides itself | what it is |', '|---|---|---|---|', ...rows].join('\n');
}

test("docs/layout.md's table of parts is this test's", () => {
  const page = readFileSync(path.join(REPO, 'docs', 'layout.md'), 'utf8');
  assert.ok(page.includes(partsTable()), `docs/layout.md should hold:\n${partsTable()}`);
});

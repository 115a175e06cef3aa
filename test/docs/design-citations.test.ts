import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { REPO } from '../helpers/host.js';

// The repository carries its own design (issue 31 item 19): docs/design.md, cited by section as
// `docs/design.md §n`. Nothing may cite a document outside the repository, every citation must
// name a section the document has, and no string a user sees may send them to a document or a
// section at all: a host has no docs/ folder to look in, so output says the rule itself.

const FOLDERS = ['src', 'test', 'scripts', 'bench', 'docs', 'packaging', 'systemd', 'bin', 'examples', '.ci'];
const TOP_FILES = ['README.md', 'CHANGELOG.md', 'package.json', 'tsconfig.json', 'tsconfig.ui.json', '.gitignore'];
const TEXT = /\.(ts|tsx|js|mjs|cjs|json|md|html|css|sh|service|conf|txt|yml|yaml)$|(^|\/)[^./]+$|\.(postinst|prerm|postrm|preinst|lintian-overrides|install|control)$/;
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', 'screenshots']);
const THIS_FILE = 'test/docs/design-citations.test.ts';

function walk(rel: string, out: string[]): void {
  const abs = path.join(REPO, rel);
  if (!existsSync(abs)) return;
  if (statSync(abs).isDirectory()) {
    for (const name of readdirSync(abs)) if (!SKIP_DIRS.has(name)) walk(`${rel}/${name}`, out);
  } else if (TEXT.test(rel)) out.push(rel);
}

function repoFiles(): string[] {
  const out: string[] = [];
  for (const f of FOLDERS) walk(f, out);
  for (const f of TOP_FILES) if (existsSync(path.join(REPO, f))) out.push(f);
  return out;
}

// Built from pieces so that this file does not match itself.
const OUTSIDE = [
  new RegExp(['\\.\\.', 'shared', ''].join('/')),
  new RegExp(['', 'work', 'shared', ''].join('/')),
  new RegExp('\\b' + 'DESIGN' + '\\b'),
];

test('no file cites the design by a document outside the repository', () => {
  const found: string[] = [];
  for (const rel of repoFiles()) {
    if (rel === THIS_FILE) continue;
    const lines = readFileSync(path.join(REPO, rel), 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (OUTSIDE.some((re) => re.test(line))) found.push(`${rel}:${i + 1}: ${line.trim().slice(0, 120)}`);
    });
  }
  assert.deepEqual(found, [], `cite docs/design.md §n instead (${found.length} lines)`);
});

// The section numbers docs/design.md has: each heading that starts with one ("## 3. Releases",
// "### 3.4 Extract", "#### 14.4 At most once").
function designSections(): Set<string> {
  const text = readFileSync(path.join(REPO, 'docs/design.md'), 'utf8');
  return new Set([...text.matchAll(/^#{2,4} (\d+(?:\.\d+)*)\.? /gm)].map((m) => m[1] as string));
}

// Every section a citation names: `design.md §3.4`, and the ones listed after it in the same
// citation (`§9, §12`, `§11–§13`, `§3 and §5`), ranges expanded.
function citedSections(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/design\.md\)? §(\d+(?:\.\d+)*)((?:(?:,| and| or|–|-|\/) ?§\d+(?:\.\d+)*)*)/g)) {
    out.push(m[1] as string);
    const rest = m[2] as string;
    for (const r of rest.matchAll(/(–|-)?§(\d+(?:\.\d+)*)/g)) {
      const n = r[2] as string;
      const prev = out[out.length - 1] as string;
      if (r[1] && /^\d+$/.test(prev) && /^\d+$/.test(n)) for (let k = Number(prev) + 1; k < Number(n); k++) out.push(String(k));
      out.push(n);
    }
  }
  return out;
}

test('the design document has a heading for sections 1 to 16 and for each staging and self-update step', () => {
  const sections = designSections();
  for (let n = 1; n <= 16; n++) assert.ok(sections.has(String(n)), `docs/design.md has no heading for §${n}`);
  for (const n of ['3.1', '3.2', '3.3', '3.4', '3.5', '3.6', '14.1', '14.2', '14.3', '14.4', '14.5']) assert.ok(sections.has(n), `docs/design.md has no heading for §${n}`);
});

test('every docs/design.md citation names a section the document has', () => {
  const sections = designSections();
  const missing: string[] = [];
  for (const rel of repoFiles()) {
    if (rel === THIS_FILE) continue;
    const text = readFileSync(path.join(REPO, rel), 'utf8');
    for (const n of citedSections(text)) if (!sections.has(n)) missing.push(`${rel}: §${n}`);
  }
  assert.deepEqual(missing, []);
});

test('the citation reader finds lists and ranges, so the check above cannot pass by reading nothing', () => {
  assert.deepEqual(citedSections('(docs/design.md §9, §11–§13) and docs/design.md §3.4; [design.md §2](design.md)'), ['9', '11', '12', '13', '3.4', '2']);
});

// The string literals of TypeScript code, with their lines: what a program can print, log or
// answer. Comments are not strings, so they may cite the design.
function stringLiterals(name: string, code: string): Array<{ line: number; text: string }> {
  const source = ts.createSourceFile(name, code, ts.ScriptTarget.Latest, true, name.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const out: Array<{ line: number; text: string }> = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node) || ts.isJsxText(node)) {
      out.push({ line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1, text: node.text });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

// A section sign is a citation; a file name alone (the package ships design.md) is not.
const NAMES_A_DOCUMENT = /DESIGN|§/;

test('no string in the programs, scripts or benches names the design document or a section of it', () => {
  const files: string[] = [];
  for (const f of ['src', 'bin', 'scripts', 'bench']) walk(f, files);
  const found: string[] = [];
  for (const rel of files) {
    const abs = path.join(REPO, rel);
    if (/\.(ts|tsx)$/.test(rel)) {
      for (const s of stringLiterals(rel, readFileSync(abs, 'utf8'))) if (NAMES_A_DOCUMENT.test(s.text)) found.push(`${rel}:${s.line}: ${s.text.slice(0, 120)}`);
    } else if (/\.(html|js)$/.test(rel)) {
      // Markup and plain launchers: any line that is not a comment.
      readFileSync(abs, 'utf8').split('\n').forEach((line, i) => {
        if (!/^\s*(\/\/|\*|\/\*|<!--)/.test(line) && NAMES_A_DOCUMENT.test(line)) found.push(`${rel}:${i + 1}: ${line.trim().slice(0, 120)}`);
      });
    }
  }
  // The launcher is sh: its messages are the lines that are not comments.
  readFileSync(path.join(REPO, 'systemd/steward-launcher'), 'utf8').split('\n').forEach((line, i) => {
    if (!/^\s*#/.test(line) && NAMES_A_DOCUMENT.test(line)) found.push(`systemd/steward-launcher:${i + 1}: ${line.trim().slice(0, 120)}`);
  });
  assert.deepEqual(found, [], 'say the rule itself: a host has no docs/ folder');
});

test('the string reader sees plain strings and each part of a template, and no comment', () => {
  const code = "// see §1\nconst a = 'one §2'; const b = `two ${a} three`; /* four */\n";
  assert.deepEqual(stringLiterals('probe.ts', code), [{ line: 2, text: 'one §2' }, { line: 2, text: 'two ' }, { line: 2, text: ' three' }]);
});

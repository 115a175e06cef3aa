import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO } from '../helpers/host.js';

// The README is the newcomer's page and the docs/ pages hold the rest (issue 16): every relative
// link in them must lead somewhere, every page in docs/ must be reachable from the README, and
// the README stays short enough to read on one to three screens.

const pages = ['README.md', 'CHANGELOG.md', 'bench/README.md', ...readdirSync(path.join(REPO, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

// GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, blanks to `-`.
function anchor(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of text.matchAll(/^#{1,6} (.+)$/gm)) {
    const a = anchor((m[1] as string).replace(/`/g, ''));
    const n = seen.get(a) ?? 0;
    seen.set(a, n + 1);
    out.add(n === 0 ? a : `${a}-${n}`);
  }
  return out;
}

// Links outside code blocks: [text](target).
function linksOf(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string);
}

test('every relative link in the README and docs/ leads to a file, and every #anchor to a heading', () => {
  const broken: string[] = [];
  for (const page of pages) {
    const text = readFileSync(path.join(REPO, page), 'utf8');
    for (const link of linksOf(text)) {
      if (/^[a-z]+:/i.test(link)) continue;
      const [file, hash] = link.split('#') as [string, string | undefined];
      const target = file === '' ? path.join(REPO, page) : path.resolve(path.dirname(path.join(REPO, page)), file);
      if (!existsSync(target)) {
        broken.push(`${page}: ${link} (no file)`);
        continue;
      }
      if (hash !== undefined && target.endsWith('.md') && !anchorsOf(readFileSync(target, 'utf8')).has(hash)) broken.push(`${page}: ${link} (no heading)`);
    }
  }
  assert.deepEqual(broken, []);
});

test('every page in docs/ is linked from the README', () => {
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const linked = new Set(linksOf(readme).map((l) => l.split('#')[0]));
  const orphans = pages.filter((p) => p.startsWith('docs/') && !linked.has(p));
  assert.deepEqual(orphans, [], 'pages no one can find from the README');
});

test('the README fits in three screens (at most 160 lines)', () => {
  const lines = readFileSync(path.join(REPO, 'README.md'), 'utf8').split('\n').length;
  assert.ok(lines <= 160, `README.md has ${lines} lines: move detail to docs/`);
});

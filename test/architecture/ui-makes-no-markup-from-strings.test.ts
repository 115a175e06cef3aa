import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { REPO } from '../helpers/host.js';

// The dashboard shows strings a node sent (hostnames, versions, reasons, log lines): docs/design.md §12
// says as text, never as markup. Its DOM is made by src/ui/dom.ts with createElement and text
// nodes; none of the browser APIs that parse a string as HTML, or run one as code, may appear
// in src/ui.
const PARSES_MARKUP = /\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write|writeln|createContextualFragment|DOMParser|srcdoc|setHTMLUnsafe|parseHTMLUnsafe|eval|Function\s*\(|setAttribute\s*\(\s*['"]on)/;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : /\.(ts|html)$/.test(name) ? [p] : [];
  });
}

test('no file of the dashboard parses a string as HTML or runs one as code', () => {
  const files = sources(path.join(REPO, 'src/ui'));
  assert.ok(files.length >= 10, `only ${files.length} files found in src/ui`);
  const found: string[] = [];
  for (const f of files) {
    readFileSync(f, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const m = PARSES_MARKUP.exec(line);
        if (m) found.push(`${path.relative(REPO, f)}:${i + 1}: ${m[0]}`);
      });
  }
  assert.deepEqual(found, [], `markup or code made from strings:\n${found.join('\n')}`);
});

test('the page holds no inline script or style, which its Content-Security-Policy would refuse', () => {
  const html = readFileSync(path.join(REPO, 'src/ui/index.html'), 'utf8');
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'every script has a src');
  assert.doesNotMatch(html, /<style|\sstyle=|\son[a-z]+=/i);
});

// The dashboard's files (docs/design.md §12): the page, its style sheet, icon and scripts, as the build
// left them in dist/src/ui/ (src/ui/ compiled by tsconfig.ui.json, plus its .html, .css, .svg).
// Read once, on the first request; served from memory under /ui/ with a Content-Security-Policy
// that takes scripts, styles and connections from this origin only and no inline code at all.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SECURITY_HEADERS, sendAdminError } from './admin-answers.js';

// tsc's output: dist/src/control/admin/ -> dist/src/ui/. steward-control's bundle
// (scripts/bundle.ts), whose files all sit in dist/bundle/steward-control/, carries a copy in its
// ui/.
const HERE = path.dirname(fileURLToPath(import.meta.url));
const UI_DIR = existsSync(path.join(HERE, 'ui')) ? path.join(HERE, 'ui') : path.resolve(HERE, '../../ui');

export const UI_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

interface UiFile {
  type: string;
  bytes: Buffer;
}

let files: Map<string, UiFile> | null = null;

// The files by their name in the folder (`app.js`, `pages/fleet.js`), read once.
function uiFiles(): Map<string, UiFile> {
  if (files) return files;
  const found = new Map<string, UiFile>();
  const walk = (dir: string, prefix: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (!/^[a-z0-9-]+(\.[a-z]+)?$/.test(name)) continue;
      const type = TYPES[path.extname(name)];
      if (type) found.set(prefix + name, { type, bytes: readFileSync(path.join(dir, name)) });
      else if (!path.extname(name)) walk(path.join(dir, name), `${prefix}${name}/`);
    }
  };
  walk(UI_DIR, '');
  files = found;
  return found;
}

// Answers GET or HEAD of a dashboard file under /ui/ (`/ui/` is the page) and resolves true;
// false when no such file was built.
export function serveUiFile(res: ServerResponse, urlPath: string, headOnly: boolean): boolean {
  const name = urlPath === '/ui' || urlPath === '/ui/' ? 'index.html' : urlPath.slice('/ui/'.length);
  const file = uiFiles().get(name);
  if (!file) {
    if (name === 'index.html') sendAdminError(res, 'NOT_FOUND', `the dashboard is not built (no ${path.join(UI_DIR, name)}): run \`npm run build\``);
    return name === 'index.html';
  }
  res.writeHead(200, { ...SECURITY_HEADERS, 'content-security-policy': UI_CSP, 'content-type': file.type, 'content-length': String(file.bytes.length) });
  res.end(headOnly ? undefined : file.bytes);
  return true;
}

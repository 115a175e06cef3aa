#!/usr/bin/env node
// The last step of `npm run build`: the dashboard's page, style sheet and icon (src/ui/*.html,
// *.css, *.svg) go beside its compiled script in dist/src/ui/, the one folder the admin listener serves /ui/
// from (and the one a package copies with the rest of dist/src).
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const from = path.join(root, 'src/ui');
const to = path.join(root, 'dist/src/ui');
mkdirSync(to, { recursive: true });
for (const name of readdirSync(from)) if (/\.(html|css|svg)$/.test(name)) copyFileSync(path.join(from, name), path.join(to, name));

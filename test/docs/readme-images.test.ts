import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { REPO } from '../helpers/host.js';

test('every image the README shows exists in the repository', () => {
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const images = [...readme.matchAll(/!\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1] as string);
  assert.ok(images.length >= 3, `the README shows ${images.length} images; its Dashboard section shows three`);
  const missing = images.filter((src) => !/^https?:/.test(src) && !(existsSync(path.join(REPO, src)) && statSync(path.join(REPO, src)).size > 0));
  assert.deepEqual(missing, []);
  assert.deepEqual(images.filter((src) => /^https?:/.test(src)), [], 'no image from elsewhere: they are taken by npm run screenshots');
});

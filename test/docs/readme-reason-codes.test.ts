import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REASON_CODES } from '../../src/core/errors.js';
import { withReasonCodes } from '../../scripts/readme-codes.js';
import { REPO } from '../helpers/host.js';

test('the README documents every reason code exactly as the CLI maps it', () => {
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  for (const code of REASON_CODES) assert.ok(readme.includes(`\`${code}\``), `README lacks ${code}`);
  assert.equal(readme, withReasonCodes(readme), 'README reason-code table is stale: run `npm run readme-codes`');
});

test('the README starts with the test command', () => {
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const firstBlock = readme.slice(0, readme.indexOf('## '));
  assert.ok(firstBlock.includes('npm ci && npm test'));
});

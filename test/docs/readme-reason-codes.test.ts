import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REASON_CODES } from '../../src/core/errors.js';
import { withReasonCodes } from '../../scripts/readme-codes.js';
import { REPO } from '../helpers/host.js';

test('docs/reason-codes.md documents every reason code exactly as the CLI maps it', () => {
  const page = readFileSync(path.join(REPO, 'docs', 'reason-codes.md'), 'utf8');
  for (const code of REASON_CODES) assert.ok(page.includes(`\`${code}\``), `docs/reason-codes.md lacks ${code}`);
  assert.equal(page, withReasonCodes(page), 'the reason-code table in docs/reason-codes.md is stale: run `npm run readme-codes`');
});

test('the README starts with the test command', () => {
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const firstBlock = readme.slice(0, readme.indexOf('## '));
  assert.ok(firstBlock.includes('npm ci && npm test'));
});

// The commit of a good fake helper on trial, in a process of its own: what the launcher tests'
// fake runtime starts where the crash explorer traces it (launcher-commit-steps.ts).
// argv: <root> <version> <tree>.
import { commitFakeTrial } from './launcher-commit-steps.js';

const [root, version, tree] = process.argv.slice(2) as [string, string, string];
await commitFakeTrial(root, version, tree);

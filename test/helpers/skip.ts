import type { TestContext } from 'node:test';

// Skips a test whose facility (root, a tmpfs mount, unshare) is truly absent here, printing why.
// Under CI=true the facility must be there (CI runs as root), so the reason fails the test instead.
export function skipUnlessCI(t: Pick<TestContext, 'skip'>, reason: string): void {
  if (process.env.CI === 'true') throw new Error(`CI=true, so this test must run, but: ${reason}`);
  console.log(`skipping: ${reason}`);
  t.skip(reason);
}

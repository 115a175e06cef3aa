import type * as z from './zod-mini.js';

// Formats zod issues as "key.path: message" lines for an error naming the file.
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 10)
    .map((i) => {
      const key = i.path.length ? i.path.map(String).join('.') : '(top level)';
      const extra = i.code === 'unrecognized_keys' ? ` (${(i as { keys?: string[] }).keys?.join(', ')})` : '';
      // A bad record key (an app name) carries the key's own issues inside.
      const inner = i.code === 'invalid_key' ? (i as { issues?: Array<{ message: string }> }).issues?.[0]?.message : undefined;
      return `${key}: ${inner ?? i.message}${extra}`;
    })
    .join('; ');
}

// What a --db value says without opening it, kept apart from the store (and from pg, which is
// loaded only when a PostgreSQL database is opened: ../open-store.ts).

// Whether `spec` (a --db value) names a PostgreSQL database.
export function isPostgresUrl(spec: string): boolean {
  return /^postgres(ql)?:\/\//i.test(spec);
}

// The URL without its password, for messages and logs.
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

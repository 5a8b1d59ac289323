export type ServiceRole = 'acquirer' | 'api' | 'relay' | 'settlement' | 'webhooks';

/**
 * `url` (the owner's, on any database) rewritten to log in as a process kind's own role, with
 * the local-development password (scripts/db/create-roles.sql: the password is the name).
 */
export function roleDatabaseUrl(url: string, role: ServiceRole): string {
  const parsed = new URL(url);
  parsed.username = `payments_${role}`;
  parsed.password = `payments_${role}`;
  return parsed.toString();
}

/**
 * The database logins of the service's process roles, for tools that start role processes on a
 * database the owner made (a chaos run's, a benchmark's): every process logs in as its own role,
 * as deployed, never as the owner (the owner only creates the database and migrates it).
 */

export type ServiceRole = 'api' | 'relay' | 'settlement' | 'webhooks' | 'acquirer';

export const SERVICE_ROLES: readonly ServiceRole[] = [
  'api',
  'relay',
  'settlement',
  'webhooks',
  'acquirer',
];

/** The variables `scripts/stack.sh env` (and docker-compose.yml) give each role's login in. */
export const ROLE_URL_VARIABLES: Readonly<Record<ServiceRole, string>> = {
  api: 'API_DATABASE_URL',
  relay: 'RELAY_DATABASE_URL',
  settlement: 'SETTLEMENT_DATABASE_URL',
  webhooks: 'WEBHOOKS_DATABASE_URL',
  acquirer: 'ACQUIRER_DATABASE_URL',
};

/**
 * `ownerUrl` (the owner's URL of any database: host, port, database and parameters are kept)
 * rewritten to log in as `role`'s login. The user name and password come from the role's URL in
 * `env` (`API_DATABASE_URL`, ...) when it is set and carries a user name; otherwise the local
 * stack's (scripts/db/create-roles.sql: `payments_<role>`, password equal to the name).
 */
export function roleDatabaseUrl(
  ownerUrl: string,
  role: ServiceRole,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string {
  const url = new URL(ownerUrl);
  const credentials = roleCredentials(role, env[ROLE_URL_VARIABLES[role]]);
  url.username = credentials.username;
  url.password = credentials.password;
  return url.toString();
}

function roleCredentials(
  role: ServiceRole,
  roleUrl: string | undefined,
): { username: string; password: string } {
  if (roleUrl !== undefined && roleUrl !== '') {
    if (!URL.canParse(roleUrl)) throw new Error(`${ROLE_URL_VARIABLES[role]} is not a URL`);
    const parsed = new URL(roleUrl);
    // URL keeps them percent-encoded, as the username/password setters expect them back.
    if (parsed.username !== '') return { username: parsed.username, password: parsed.password };
  }
  const name = `payments_${role}`;
  return { username: name, password: name };
}

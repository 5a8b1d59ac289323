/** Socket-level failures that mean "the database cannot be reached right now". */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
]);

/**
 * SQLSTATEs that mean "not now" rather than "your request is wrong": connection exceptions
 * (class 08), too many connections, shutdown in progress, cannot connect now, and a write on a
 * read-only node (25006: the stable address still led to a standby or a demoted primary during
 * a failover, DESIGN 124; the transaction's connection is then dropped, and the next one goes to
 * wherever the address leads now).
 */
const UNAVAILABLE_SQLSTATE = /^(08...|53300|57P01|57P02|57P03|25006)$/;

/** Whether an error from pg means Postgres is unavailable (answer 503), not a bug (500). */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code)))
    return true;
  // pg-pool's connection timeout and a connection dropped mid-query carry no code.
  // pg's query_timeout says "Query read timeout".
  return /timeout exceeded when trying to connect|Connection terminated|connection timeout|Client has encountered a connection error|Query read timeout/i.test(
    error.message,
  );
}

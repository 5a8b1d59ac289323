/** Postgres' foreign_key_violation: the row names something (a tier, a merchant) that is not there. */
export function isForeignKeyViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23503';
}

/** Postgres' invalid_text_representation: e.g. a malformed uuid given as an id. */
export function isInvalidText(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '22P02';
}

/** Postgres' check_violation: a value outside a column's CHECK. */
export function isCheckViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23514';
}

import type { Request } from 'express';

/**
 * The matched route template (`/payments/:id`), never the raw path: a label or span name from
 * the raw path would make one series per payment id. Undefined when no route matched.
 */
export function routeOf(req: Request): string | undefined {
  const route = (req.route as { path?: unknown } | undefined)?.path;
  return typeof route === 'string' ? `${req.baseUrl}${route}` : undefined;
}

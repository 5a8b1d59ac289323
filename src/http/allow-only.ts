import type { NextFunction, Request, Response } from 'express';
import { ApiError } from './api-error.js';

/**
 * A 405 problem with `Allow` for any method not in `allow` ("GET, HEAD, POST"); the path's own
 * handlers serve the rest. Mounted with `router.all(path, ...)` before authentication, so a
 * method a path does not have is 405 whoever asks.
 */
export function allowOnly(allow: string) {
  const methods = new Set(allow.split(', '));
  return (req: Request, _res: Response, next: NextFunction) => {
    if (methods.has(req.method)) {
      next();
      return;
    }
    throw new ApiError('method_not_allowed', `${req.method} is not allowed on ${req.path}.`, {
      headers: { Allow: allow },
    });
  };
}

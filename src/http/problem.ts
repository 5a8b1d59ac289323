import type { Response } from 'express';

/** RFC 9457 problem details, the body of every error this service answers. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  errors?: { path: string; message: string }[];
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Problem type URIs are stable identifiers documented in the OpenAPI description. */
export function problemType(code: string): string {
  return `https://payments.example/problems/${code.replaceAll('_', '-')}`;
}

export function problem(
  status: number,
  code: string,
  title: string,
  detail: string,
  errors?: Problem['errors'],
): Problem {
  return { type: problemType(code), title, status, detail, code, ...(errors ? { errors } : {}) };
}

export function sendProblem(res: Response, body: Problem, headers: Record<string, string> = {}) {
  res.status(body.status).set(headers).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(body));
}

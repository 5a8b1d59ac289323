import {
  HOLD_DECLINE_CODES,
  type AuthorizeRequest,
  type CaptureRequest,
  type HoldAcquirer,
  type HoldResult,
  type VoidRequest,
} from '../../src/acquirer/hold-acquirer.js';

/** One payment's books at the double: its hold, what was captured and released. */
export interface HoldBooks {
  authorizations: number;
  captures: number;
  voids: number;
  held: number;
  captured: number;
  released: number;
}

/**
 * An in-memory HoldAcquirer for integration tests until the simulator implements it (issue 40):
 * keeps per-payment books (hold, captured, released) and per-key answers, so a retried call gets
 * the stored answer and is never carried out twice. Tokens: `tok_decline` declines the
 * authorization (card_declined), `tok_capture_decline` authorizes but declines the capture
 * (capture_declined). `calls` counts every call, replays included.
 */
export function createHoldAcquirerDouble(): HoldAcquirer & {
  books: (paymentId: string) => HoldBooks;
  calls: { authorize: number; capture: number; void: number };
} {
  const answers = new Map<string, HoldResult>();
  const books = new Map<string, HoldBooks>();
  const calls = { authorize: 0, capture: 0, void: 0 };
  const bookOf = (paymentId: string): HoldBooks => {
    let book = books.get(paymentId);
    if (!book) {
      book = { authorizations: 0, captures: 0, voids: 0, held: 0, captured: 0, released: 0 };
      books.set(paymentId, book);
    }
    return book;
  };
  const once = (key: string, act: () => HoldResult): Promise<HoldResult> => {
    let answer = answers.get(key);
    if (!answer) {
      answer = act();
      answers.set(key, answer);
    }
    return Promise.resolve(answer);
  };
  const declined = (code: string): HoldResult => ({ outcome: 'declined', code });
  const approved = (key: string): HoldResult => ({ outcome: 'approved', reference: `ref_${key}` });

  const authorize = (request: AuthorizeRequest) =>
    once(request.idempotencyKey, () => {
      if (request.source === 'tok_decline') return declined('card_declined');
      const book = bookOf(request.paymentId);
      book.authorizations++;
      book.held = request.amount;
      return approved(request.idempotencyKey);
    });
  const capture = (request: CaptureRequest) =>
    once(request.idempotencyKey, () => {
      const book = bookOf(request.paymentId);
      if (book.authorizations === 0) return declined(HOLD_DECLINE_CODES.noAuthorization);
      if (book.voids > 0) return declined(HOLD_DECLINE_CODES.authorizationVoided);
      if (book.captures > 0) return declined(HOLD_DECLINE_CODES.alreadyCaptured);
      if (request.amount > book.held) {
        return declined(HOLD_DECLINE_CODES.amountExceedsAuthorization);
      }
      if (request.source === 'tok_capture_decline') {
        return declined(HOLD_DECLINE_CODES.captureDeclined);
      }
      book.captures++;
      book.captured = request.amount;
      book.released = book.held - request.amount;
      return approved(request.idempotencyKey);
    });
  const voidHold = (request: VoidRequest) =>
    once(request.idempotencyKey, () => {
      const book = bookOf(request.paymentId);
      if (book.authorizations === 0) return declined(HOLD_DECLINE_CODES.noAuthorization);
      if (book.captures > 0) return declined(HOLD_DECLINE_CODES.alreadyCaptured);
      book.voids++;
      book.released = book.held;
      return approved(request.idempotencyKey);
    });
  const found = (key: string) => Promise.resolve(answers.get(key) ?? null);

  return {
    authorize: (request) => {
      calls.authorize++;
      return authorize(request);
    },
    capture: (request) => {
      calls.capture++;
      return capture(request);
    },
    void: (request) => {
      calls.void++;
      return voidHold(request);
    },
    inquireAuthorization: found,
    inquireCapture: found,
    inquireVoid: found,
    books: bookOf,
    calls,
  };
}

/**
 * The payment's columns as toPaymentResource reads them, `p.`-qualified: what every statement
 * that returns a payment for a resource or an event selects. Apart, so the writes of
 * payment-updates.ts import no schema.
 */
export const PAYMENT_RESOURCE_COLUMNS = `p.id, p.amount, p.currency, p.source, p.description,
  p.metadata, p.status, p.failure_code, p.capture_method, p.amount_captured, p.capture_before,
  p.canceled_at, p.cancellation_reason, p.created_at`;

// The idempotency layer's refusals are generic (payments and refunds); re-exported here so
// existing importers keep working.
export {
  IdempotencyCacheUnavailable,
  IdempotencyKeyInUse,
  IdempotencyKeyReused,
} from '../idempotency/idempotency-errors.js';

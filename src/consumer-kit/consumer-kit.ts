/**
 * The consumer kit for readers of payments.events (README: src/consumer-kit/README.md). It
 * imports nothing of the service but the events contract (src/events/), and only kafkajs and pg,
 * so another service can import it or copy this folder with src/events/.
 */
export {
  applyEvent,
  type ApplyOptions,
  type ApplyResult,
  type EventContext,
  type EventHandler,
  type OutOfOrderPolicy,
  type RecordPosition,
} from './apply-event.js';
export {
  createInboxConsumer,
  type InboxConsumer,
  type InboxConsumerOptions,
  type InboxCounters,
  type OutOfOrderReport,
} from './inbox-consumer.js';
export {
  DEFAULT_INBOX_PREFIX,
  ensureInboxSchema,
  inboxSchemaSql,
  inboxTables,
  type InboxTables,
} from './inbox-schema.js';
export {
  DEFAULT_GAP_DECISION,
  type GapDecision,
  type GapHandler,
  type GapReason,
  type OrderGap,
} from './order-gap.js';
export {
  checkOrder,
  LIFECYCLE_TYPES,
  type OrderVerdict,
  type SubjectState,
} from './lifecycle-order.js';
export { parseCloudEvent, type CloudEvent, type ParsedEvent } from './parse-cloud-event.js';
export { TimeoutError } from './with-timeout.js';

import { v5 as uuidv5 } from 'uuid';

/**
 * The events contract of the `payments.events` topic: every CloudEvents `type` the service
 * writes, declared here once. Each resource's events are the `<resource>.*` members; a
 * resource's `created` event announces the POST, the others are its results. Consumers read
 * the same list (src/consumer-kit/), webhooks send the results, settlement skips all but
 * `payment.created`. Adding a type here is adding it to the contract (docs/asyncapi.yaml).
 */
export const EVENT_TYPES = [
  'payment.created',
  'payment.authorized',
  'payment.settled',
  'payment.failed',
  'payment.canceled',
  'refund.created',
  'refund.succeeded',
  'refund.failed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];
export type PaymentEventType = Extract<EventType, `payment.${string}`>;
export type RefundEventType = Extract<EventType, `refund.${string}`>;
/** A resource's outcome (not its `created`): what a merchant's webhooks receive. */
export type ResultEventType = Exclude<EventType, `${string}.created`>;

export function isEventType(type: string): type is EventType {
  return (EVENT_TYPES as readonly string[]).includes(type);
}

export function isResultEventType(type: string): type is ResultEventType {
  return isEventType(type) && !type.endsWith('.created');
}

/** The result types, in the list's order (a non-empty tuple, as zod's enum wants). */
export const RESULT_EVENT_TYPES = EVENT_TYPES.filter(isResultEventType) as unknown as readonly [
  ResultEventType,
  ...ResultEventType[],
]; // `filter` returns an array type; the list above has results, so the tuple holds.

/**
 * The fixed namespace of every event id this service mints (UUIDv5). Documented in DESIGN.md
 * and the AsyncAPI document; changing it would change every event id, so it never changes.
 */
export const EVENT_ID_NAMESPACE = '4f0c8a3e-6d1b-5a7e-9c2f-8b3d1e5a7c90';

/**
 * An event id derived from the business identity (`{resource}:{id}:{type}`), never from a
 * Kafka position: a republished copy lands at a new offset but carries the same id, so
 * consumers deduplicate it.
 */
export function eventIdOf(identity: string): string {
  return uuidv5(identity, EVENT_ID_NAMESPACE);
}

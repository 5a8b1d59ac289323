import type { Queryable } from '../../src/platform/database/db.js';
import { readTopicToEnd, type Admin, type KafkaClient } from '../../src/platform/kafka/kafka.js';
import { checkDeadLetterReasons, checkDeadLetters } from './check-dead-letters.js';
import { checkPayment, type CheckOptions } from './check-payment.js';
import { createDeadLetterLog, createEventLog } from './event-log.js';
import { readDeadLetters } from './read-dead-letters.js';
import { loadHoldFacts, type HoldFacts } from './load-hold-facts.js';
import {
  existingPayments,
  loadOrphans,
  loadPaymentFacts,
  type PaymentFacts,
} from './load-payment-facts.js';
import type { Violation, ViolationCode } from './violation.js';
import { describeScope, isScoped, type VerifyScope } from './verify-scope.js';
import { verifyRefunds, type RefundReport } from './verify-refunds.js';
import { verifyWebhooks, type WebhookReport } from './verify-webhooks.js';
import type { ReceiptsFile } from '../webhooks/webhook-receipt.js';

export interface VerifyDeps {
  db: Queryable;
  /** Without Kafka only the database and the simulator's books are checked. */
  kafka?: { client: KafkaClient; admin: Admin; paymentsTopic: string; dlqTopic: string };
}

export interface VerifyOptions extends CheckOptions {
  scope: VerifyScope;
  /**
   * Reads webhook receivers' receipts (--webhook-receipts): delivered events are judged on them.
   * Called after the deliveries are read, so a delivery the database shows delivered has its
   * receipt in the files (a receiver records a request before it answers).
   */
  webhookReceipts?: () => Promise<ReceiptsFile>;
  /** WEBHOOK_EVENT_RETENTION_SECONDS: older results are not expected among stored events. */
  webhookRetentionSeconds?: number;
  /** A webhook delivery younger than this may still be pending (default: graceSeconds). */
  webhookGraceSeconds?: number;
}

export interface VerifyReport {
  scope: string;
  checkedAt: string;
  graceSeconds: number;
  payments: {
    total: number;
    pending: number;
    processing: number;
    settled: number;
    failed: number;
    /** Manual payments authorized, not captured or canceled yet (issue 40). */
    requires_capture: number;
    canceled: number;
    /**
     * Processing with a dead settlement job, or requires_capture with a dead hold job, whose
     * event is on the dead-letter topic.
     */
    deadLettered: number;
    /** Within the grace period: not judged yet on what they lack. */
    inFlight: number;
  };
  /** Idempotency records pointing at the payments in scope. */
  keys: number;
  acquirer: { approved: number; declined: number; calls: number; replayedCalls: number };
  events: { read: number; distinct: number; copies: number } | null;
  /** `byReason`: letters per error class (of the payments in scope, when scoped). */
  deadLetters: {
    read: number;
    eventIds: number;
    withoutEventId: number;
    byReason: Record<string, number>;
  } | null;
  refunds: RefundReport;
  webhooks: WebhookReport;
  counts: Partial<Record<ViolationCode, number>>;
  violations: Violation[];
  /** Copies of payment.created after its result (see PaymentVerdict.staleCopies). */
  staleCopies: number;
}

/**
 * An authorization read as requires_capture whose result (settled, failed, canceled) is on the
 * topic read after it was decided in between: a capture or cancel, or the expiry, while the
 * load goes on (a checkpoint), or a window that ended during the read. Its result committed
 * before its event was published, so reading the facts again shows it; each such payment is
 * judged on the second read (one still requires_capture then has conflicting events).
 */
async function decidedSince(
  db: Queryable,
  scope: VerifyScope,
  read: { facts: PaymentFacts[]; holds: Map<string, HoldFacts> },
  events: ReturnType<typeof createEventLog>,
): Promise<{ facts: PaymentFacts[]; holds: Map<string, HoldFacts> }> {
  const moved = new Set(
    read.facts
      .filter((payment) => {
        const copies = events.payments.get(payment.id);
        return (
          payment.status === 'requires_capture' &&
          copies !== undefined &&
          copies.settled.length + copies.failed.length + copies.canceled.length > 0
        );
      })
      .map((payment) => payment.id),
  );
  if (moved.size === 0) return read;
  const again = new Map((await loadPaymentFacts(db, scope)).map((p) => [p.id, p]));
  const holdsAgain = await loadHoldFacts(db, scope);
  const holds = new Map(read.holds);
  for (const id of moved) {
    const hold = holdsAgain.get(id);
    if (hold) holds.set(id, hold);
  }
  return {
    facts: read.facts.map((payment) =>
      moved.has(payment.id) ? (again.get(payment.id) ?? payment) : payment,
    ),
    holds,
  };
}

/**
 * Checks the invariants of BRIEF section 3 after a run (DESIGN.md record 62): the database,
 * the acquirer simulator's books, and the payments and dead-letter topics read from the
 * beginning to their current end. Returns every violation found; an empty list means the run
 * kept every invariant this can observe.
 *
 * The database is read first and the topics after: an event acknowledged for a state the
 * database shows is already below the high watermarks the topics are read up to.
 */
export async function verifyPayments(
  deps: VerifyDeps,
  options: VerifyOptions,
): Promise<VerifyReport> {
  const checkedAt = new Date().toISOString();
  let facts = await loadPaymentFacts(deps.db, options.scope);
  let holds = await loadHoldFacts(deps.db, options.scope);
  const scoped = isScoped(options.scope);
  const orphans = scoped ? null : await loadOrphans(deps.db);

  const events = createEventLog();
  let deadLetters = createDeadLetterLog();
  if (deps.kafka) {
    const { client, admin, paymentsTopic, dlqTopic } = deps.kafka;
    await readTopicToEnd(client, admin, paymentsTopic, (record) => {
      events.add(record);
    });
    deadLetters = await readDeadLetters(deps.db, client, admin, dlqTopic);
    ({ facts, holds } = await decidedSince(deps.db, options.scope, { facts, holds }, events));
  }

  const violations: Violation[] = [];
  const payments = {
    total: facts.length,
    pending: 0,
    processing: 0,
    settled: 0,
    failed: 0,
    requires_capture: 0,
    canceled: 0,
  };
  const report = { deadLettered: 0, inFlight: 0, keys: 0, staleCopies: 0 };
  const acquirer = { approved: 0, declined: 0, calls: 0, replayedCalls: 0 };
  for (const payment of facts) {
    const verdict = checkPayment(
      payment,
      deps.kafka
        ? { events: events.payments.get(payment.id), deadLetters: deadLetters.byEventId }
        : null,
      options,
      holds.get(payment.id),
    );
    violations.push(...verdict.violations);
    payments[payment.status]++;
    if (verdict.deadLettered) report.deadLettered++;
    if (verdict.inFlight) report.inFlight++;
    report.staleCopies += verdict.staleCopies;
    report.keys += payment.keyRecords;
    acquirer.approved += payment.approvedCharges;
    acquirer.declined += payment.declinedCharges;
    acquirer.calls += payment.calls;
    acquirer.replayedCalls += payment.replayedCalls;
  }

  if (orphans) {
    for (const id of orphans.charges)
      violations.push({ code: 'charge_without_payment', paymentId: id, detail: 'acquirer charge' });
    for (const id of orphans.outbox)
      violations.push({ code: 'outbox_without_payment', paymentId: id, detail: 'outbox row' });
    if (deps.kafka) {
      const known = new Set(facts.map((payment) => payment.id));
      const unknown = [...events.payments.keys()].filter((id) => !known.has(id));
      // Payments created after the facts were read have events too: ask the database again.
      const createdSince = await existingPayments(deps.db, unknown);
      for (const id of unknown.filter((id) => !createdSince.has(id)))
        violations.push({ code: 'event_without_payment', paymentId: id, detail: 'payments topic' });
    }
  }
  const reasons = checkDeadLetterReasons(
    deadLetters.reasons,
    scoped ? new Set(facts.map((payment) => payment.id)) : null,
  );
  violations.push(...reasons.violations);
  if (deps.kafka)
    violations.push(
      ...checkDeadLetters(
        deadLetters.copies,
        events.replayTokens,
        new Set(facts.map((payment) => payment.id)),
      ),
    );
  for (const record of events.malformed)
    violations.push({
      code: 'malformed_event',
      detail: `partition ${record.partition} offset ${record.offset}: ${record.problem}`,
    });

  const refunds = await verifyRefunds(
    deps.db,
    options.scope,
    deps.kafka ? { events, deadLetters: deadLetters.byEventId } : null,
    options.graceSeconds,
  );
  violations.push(...refunds.violations);

  const webhooks = await verifyWebhooks(deps.db, options.scope, {
    graceSeconds: options.webhookGraceSeconds ?? options.graceSeconds,
    retentionSeconds: options.webhookRetentionSeconds ?? 7 * 86_400,
    receipts: options.webhookReceipts ?? null,
  });
  violations.push(...webhooks.violations);

  const counts: Partial<Record<ViolationCode, number>> = {};
  for (const violation of violations) counts[violation.code] = (counts[violation.code] ?? 0) + 1;
  return {
    scope: describeScope(options.scope),
    checkedAt,
    graceSeconds: options.graceSeconds,
    payments: { ...payments, deadLettered: report.deadLettered, inFlight: report.inFlight },
    keys: report.keys,
    staleCopies: report.staleCopies,
    acquirer,
    events: deps.kafka ? events.counts() : null,
    deadLetters: deps.kafka ? { ...deadLetters.counts(), byReason: reasons.byReason } : null,
    refunds: refunds.report,
    webhooks: webhooks.report,
    counts,
    violations,
  };
}

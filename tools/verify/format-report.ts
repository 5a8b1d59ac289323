import { VIOLATIONS, type ViolationCode } from './violation.js';
import type { VerifyReport } from './verify-payments.js';

/** The report for people: a summary, then each kind of violation with a few examples. */
export function formatReport(report: VerifyReport, examplesPerCode = 5): string {
  const { payments, acquirer, events, deadLetters, refunds, webhooks } = report;
  const { deliveries, receipts } = webhooks;
  const failedReasons = Object.entries(webhooks.failedReasons)
    .map(([reason, n]) => `${n} ${reason}`)
    .join(', ');
  const lines = [
    `verify: ${report.scope} (checked ${report.checkedAt}, grace ${report.graceSeconds} s)`,
    `  payments      ${payments.total}: ${payments.settled} settled, ${payments.failed} failed, ` +
      `${payments.processing} processing (${payments.deadLettered} dead-lettered), ` +
      `${payments.requires_capture} requires_capture, ${payments.canceled} canceled, ` +
      `${payments.pending} pending; ${payments.inFlight} in flight (within the grace period)`,
    `  keys          ${report.keys} idempotency records for them`,
    `  refunds       ${refunds.total}: ${refunds.succeeded} succeeded, ${refunds.failed} failed, ` +
      `${refunds.pending} pending (${refunds.deadLettered} dead-lettered, ${refunds.inFlight} in flight)`,
    `  acquirer      ${acquirer.approved} approved and ${acquirer.declined} declined charges, ` +
      `${acquirer.calls} calls (${acquirer.replayedCalls} answered from its books)`,
    events
      ? `  events        ${events.read} read, ${events.distinct} distinct ids, ${events.copies} repeated copies`
      : '  events        not read (no Kafka)',
    ...(events
      ? [
          `  stale copies  ${report.staleCopies} copies of payment.created after its result ` +
            '(a relay paused between its lease check and its send; same event id, not a violation)',
        ]
      : []),
    deadLetters
      ? `  dead letters  ${deadLetters.read} read, ${deadLetters.eventIds} event ids, ` +
        `${deadLetters.withoutEventId} without an event id; by reason: ${byReason(deadLetters.byReason)}`
      : '  dead letters  not read (no Kafka)',
    `  webhooks      ${webhooks.endpoints} endpoints, ${webhooks.events} stored events, ` +
      `${deliveries.total} deliveries: ${deliveries.delivered} delivered, ` +
      `${deliveries.failed} failed${failedReasons ? ` (${failedReasons})` : ''}, ` +
      `${deliveries.pending} pending (${webhooks.inFlight} in flight)`,
    receipts
      ? `  receipts      ${receipts.read} requests: ${receipts.received} events received (2xx), ` +
        `${receipts.repeated} repeated, ${receipts.refused} refused or unanswered ` +
        `(${receipts.foreign} to no endpoint in scope, not judged); ` +
        `${receipts.judged} delivered deliveries judged`
      : '  receipts      none given (--webhook-receipts)',
  ];
  const codes = Object.keys(report.counts) as ViolationCode[];
  if (codes.length === 0) {
    lines.push('  violations    none');
    return lines.join('\n');
  }
  lines.push(`  violations    ${report.violations.length}`);
  for (const code of codes) {
    lines.push(`  ${code} x${report.counts[code] ?? 0}: ${VIOLATIONS[code]}`);
    const examples = report.violations.filter((violation) => violation.code === code);
    for (const violation of examples.slice(0, examplesPerCode)) {
      lines.push(`      ${violation.paymentId ?? '-'}  ${violation.detail}`);
    }
    if (examples.length > examplesPerCode)
      lines.push(`      ... and ${examples.length - examplesPerCode} more`);
  }
  return lines.join('\n');
}

/** `3 acquirer_transient, 1 malformed_json`, most first; `none` when there are none. */
function byReason(counts: Record<string, number>): string {
  const entries = Object.entries(counts).sort(([a, m], [b, n]) => n - m || a.localeCompare(b));
  return entries.length === 0 ? 'none' : entries.map(([reason, n]) => `${n} ${reason}`).join(', ');
}

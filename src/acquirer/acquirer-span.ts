import { SpanKind, type Attributes } from '@opentelemetry/api';
import { inSpan } from '../platform/tracing.js';

/**
 * An acquirer call (`acquirer charge`, `acquirer refund`) as a CLIENT span under the active
 * attempt: its duration, its answer (approved/declined) and, when it throws (timeout,
 * transient), the error. An HTTP acquirer client would propagate the active context from here.
 */
export function inAcquirerSpan<T extends { outcome: string }>(
  name: string,
  attributes: Attributes,
  call: () => Promise<T>,
): Promise<T> {
  return inSpan(name, { kind: SpanKind.CLIENT, attributes }, undefined, async (span) => {
    const result = await call();
    span.setAttribute('acquirer.outcome', result.outcome);
    return result;
  });
}

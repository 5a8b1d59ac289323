import type { ProducerRecord } from '../../src/platform/kafka/kafka.js';

/**
 * `record` (a CloudEvent as this release's relay writes it) as another release would have
 * written it: `dataversion` set, or removed when `version` is undefined (the releases before the
 * attribute), in the value and the `ce_dataversion` header, with `extra` attributes and data
 * fields added (a newer writer's additions).
 */
export function withDataVersion(
  record: ProducerRecord,
  version: string | undefined,
  extra: { envelope?: Record<string, unknown>; data?: Record<string, unknown> } = {},
): ProducerRecord {
  const envelope = JSON.parse(record.value.toString()) as Record<string, unknown>;
  const { ce_dataversion: _dropped, ...headers } = record.headers;
  delete envelope.dataversion;
  const value = {
    ...envelope,
    ...(version === undefined ? {} : { dataversion: version }),
    ...extra.envelope,
    data: { ...(envelope.data as Record<string, unknown>), ...extra.data },
  };
  return {
    key: record.key,
    value: JSON.stringify(value),
    headers: version === undefined ? headers : { ...headers, ce_dataversion: version },
  };
}

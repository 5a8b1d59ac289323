import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import type { SASLOptions } from 'kafkajs';
import type { Config } from '../config/config.js';

// How a Kafka client proves who it is and whom it talks to (DESIGN 122). Part of the Kafka
// boundary (kafka.ts).

/** The settings of configSchema's kafkaSettings a client needs; all optional (tests, tools). */
export type KafkaSecurityConfig = Partial<
  Pick<
    Config,
    | 'KAFKA_SSL'
    | 'KAFKA_SSL_CA_FILE'
    | 'KAFKA_SASL_MECHANISM'
    | 'KAFKA_SASL_USERNAME'
    | 'KAFKA_SASL_PASSWORD'
  >
>;

/**
 * kafkajs' `ssl` and `sasl` options: TLS when KAFKA_SSL or KAFKA_SSL_CA_FILE is set, the broker's
 * certificate checked against that CA (the system's otherwise) and its host name against the
 * bootstrap address (Node's default check); a SASL login when KAFKA_SASL_MECHANISM is set
 * (loadConfig has made sure the user and password are too).
 */
export function kafkaSecurity(
  config: KafkaSecurityConfig,
  readFile: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): { ssl?: ConnectionOptions; sasl?: SASLOptions } {
  const security: { ssl?: ConnectionOptions; sasl?: SASLOptions } = {};
  const caFile = config.KAFKA_SSL_CA_FILE;
  if (config.KAFKA_SSL === true || caFile !== undefined) {
    security.ssl = {
      rejectUnauthorized: true,
      ...(caFile === undefined ? {} : { ca: [readFile(caFile)] }),
    };
  }
  const { KAFKA_SASL_MECHANISM: mechanism } = config;
  if (mechanism !== undefined) {
    const username = config.KAFKA_SASL_USERNAME ?? '';
    const password = config.KAFKA_SASL_PASSWORD ?? '';
    security.sasl = { mechanism, username, password };
  }
  return security;
}

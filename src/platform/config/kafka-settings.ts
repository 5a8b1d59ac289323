import { z } from 'zod';
import { checkReadable } from './check-readable.js';
import { integer } from './config-fields.js';
import { ConfigError } from './config-error.js';

/**
 * How the service reaches a production Kafka: TLS (the broker's certificate and host name
 * verified), a SASL login, and the replication of the topics it creates (part of configSchema;
 * DESIGN 122). Unset, a plaintext, unauthenticated local broker and its defaults.
 */
export const kafkaSettings = {
  KAFKA_SSL: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .transform((value) => value === 'true')
    .default(false)
    .describe(
      '`true`: connect to the brokers over TLS, verifying their certificate (system CAs, or KAFKA_SSL_CA_FILE) and host name.',
    ),
  KAFKA_SSL_CA_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      "PEM file of the CA that signed the brokers' certificates (a private CA); implies KAFKA_SSL=true.",
    ),
  KAFKA_SASL_MECHANISM: z
    .enum(['plain', 'scram-sha-256', 'scram-sha-512'], {
      error: 'must be plain, scram-sha-256 or scram-sha-512',
    })
    .optional()
    .describe(
      'SASL mechanism of the Kafka login (`plain`, `scram-sha-256`, `scram-sha-512`); unset: no SASL. Needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD.',
    ),
  KAFKA_SASL_USERNAME: z
    .string()
    .min(1)
    .optional()
    .describe('User of the Kafka SASL login (with KAFKA_SASL_MECHANISM).'),
  KAFKA_SASL_PASSWORD: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Password of the Kafka SASL login (never echoed in errors); or `KAFKA_SASL_PASSWORD_FILE` naming a file that holds it.',
    ),
  KAFKA_TOPIC_REPLICATION_FACTOR: integer(1, 32)
    .optional()
    .describe(
      "Replication factor of the topics the service creates (unset: the broker's default.replication.factor). With NODE_ENV=production the relay and settlement refuse to start on topics below 3.",
    ),
  KAFKA_TOPIC_MIN_INSYNC_REPLICAS: integer(1, 32)
    .optional()
    .describe(
      "min.insync.replicas set on the topics the service creates (unset: the broker's). With NODE_ENV=production the relay and settlement refuse to start on topics below 2.",
    ),
};

interface KafkaSecurityConfig {
  KAFKA_SSL_CA_FILE?: string | undefined;
  KAFKA_SASL_MECHANISM?: string | undefined;
  KAFKA_SASL_USERNAME?: string | undefined;
  KAFKA_SASL_PASSWORD?: string | undefined;
  KAFKA_TOPIC_REPLICATION_FACTOR?: number | undefined;
  KAFKA_TOPIC_MIN_INSYNC_REPLICAS?: number | undefined;
}

/**
 * The Kafka settings that only make sense together: a SASL login whole or not at all, a readable
 * CA file, a min ISR the replication factor can meet. Throws a ConfigError naming the setting.
 */
export function checkKafkaSettings(
  config: KafkaSecurityConfig,
  readFile: (path: string) => string,
): void {
  const sasl = ['KAFKA_SASL_MECHANISM', 'KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'] as const;
  const [first] = sasl.filter((name) => config[name] !== undefined);
  const missing = sasl.filter((name) => config[name] === undefined);
  if (first !== undefined && missing.length > 0) {
    throw new ConfigError(first, `needs ${missing.join(' and ')} too (a SASL login)`);
  }
  if (config.KAFKA_SSL_CA_FILE !== undefined) {
    checkReadable('KAFKA_SSL_CA_FILE', config.KAFKA_SSL_CA_FILE, readFile);
  }
  const factor = config.KAFKA_TOPIC_REPLICATION_FACTOR;
  const minIsr = config.KAFKA_TOPIC_MIN_INSYNC_REPLICAS;
  if (factor !== undefined && minIsr !== undefined && minIsr > factor) {
    throw new ConfigError(
      'KAFKA_TOPIC_MIN_INSYNC_REPLICAS',
      `must not exceed KAFKA_TOPIC_REPLICATION_FACTOR (${String(factor)}): no write could succeed (got ${String(minIsr)})`,
    );
  }
}

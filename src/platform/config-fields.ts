import { z } from 'zod';

// The value types of the configuration schema: each rejects with a message naming its rule.

export const urlWithProtocol = (protocols: readonly string[], example: string) =>
  z.string().refine(
    (value) => {
      try {
        const url = new URL(value);
        return protocols.includes(url.protocol) && url.hostname !== '';
      } catch {
        return false;
      }
    },
    { message: `must be a URL like ${example}` },
  );

export const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, { message: `must be an integer between ${min} and ${max}` })
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(min, { message: `must be at least ${min}` })
        .max(max, { message: `must be at most ${max}` }),
    );

export const brokerList = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((broker) => broker.trim())
      .filter((broker) => broker !== ''),
  )
  .pipe(
    z
      .array(
        z.string().regex(/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/, {
          message: 'each broker must be host:port',
        }),
      )
      .min(1, { message: 'must list at least one host:port' }),
  );

export const topicName = z.string().regex(/^[A-Za-z0-9._-]{1,249}$/, {
  message: 'must be a Kafka topic name ([A-Za-z0-9._-], 1-249 chars)',
});

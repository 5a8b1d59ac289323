import type { Config } from '../platform/config/config.js';

/** The dependencies a process probes (platform.ts names its checks after them). */
export type Dependency = 'postgres' | 'redis' | 'kafka';

type RoleName = 'acquirer' | 'api' | 'relay' | 'settlement' | 'webhooks';

/**
 * What each role cannot do its job without (issue 36 item 5, DESIGN 109): its readiness follows
 * these alone. Every role keeps its state in Postgres. The API serves through the database when
 * Redis is away (REDIS_FAILURE_MODE=open), so Redis is needed only when it fails closed; it never
 * talks to Kafka (the outbox). The relay publishes to Kafka; settlement consumes from it and
 * sends its dead letters there. The acquirer and the webhooks role use neither Redis nor Kafka.
 * Only the API has a Redis client at all, on its own Redis user (DESIGN 117).
 */
export function roleDependencies(
  role: RoleName,
  config: Pick<Config, 'REDIS_FAILURE_MODE'>,
): readonly Dependency[] {
  switch (role) {
    case 'api':
      return config.REDIS_FAILURE_MODE === 'closed' ? ['postgres', 'redis'] : ['postgres'];
    case 'relay':
    case 'settlement':
      return ['postgres', 'kafka'];
    case 'acquirer':
    case 'webhooks':
      return ['postgres'];
  }
}

/** What a process running `roles` needs: the union of theirs (its internal readiness). */
export function processDependencies(
  roles: readonly RoleName[],
  config: Pick<Config, 'REDIS_FAILURE_MODE'>,
): readonly Dependency[] {
  return [...new Set(roles.flatMap((role) => roleDependencies(role, config)))];
}

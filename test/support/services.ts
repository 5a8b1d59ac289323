import { execFile } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { StartedTestContainer } from 'testcontainers';

const run = promisify(execFile);
export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

/** Where the integration tests' Postgres, Redis and Kafka come from, and how to stop them. */
export interface Services {
  source: 'env' | 'testcontainers' | 'native';
  /** The owner's login (runs migrations, creates the per-file databases). */
  databaseUrl: string;
  redisUrl: string;
  kafkaBrokers: string;
  /**
   * Seeds of a Redis Cluster (REDIS_CLUSTER_NODES, env mode only; `npm run test:redis-cluster`):
   * the tests' Redis clients and APIs then use a Cluster client logged in as redisUrl's user.
   */
  redisClusterNodes?: string;
  /** REDIS_TLS_CA_FILE for a `rediss://` redisUrl (env mode only). */
  redisTlsCaFile?: string;
}

/** The variables that point the suite (and the service) at a running stack. */
const STACK_VARIABLES = [
  'DATABASE_URL',
  'REDIS_URL',
  'REDIS_CLUSTER_NODES',
  'REDIS_TLS_CA_FILE',
  'KAFKA_BROKERS',
  'API_DATABASE_URL',
  'RELAY_DATABASE_URL',
  'SETTLEMENT_DATABASE_URL',
  'WEBHOOKS_DATABASE_URL',
  'MIGRATION_DATABASE_URL',
] as const;

/**
 * Chosen explicitly, never by what happens to be running:
 * 1. TEST_SERVICES=containers: fresh containers with testcontainers, from the images
 *    docker-compose.yml uses (postgres:15, redis:7, apache/kafka:3.9.1); the variables below are
 *    ignored (and removed from this process, so nothing started from it sees another stack);
 * 2. otherwise DATABASE_URL / REDIS_URL / KAFKA_BROKERS when all three are given (CI, a shared stack);
 * 3. otherwise the native stack (`scripts/stack.sh start`, idempotent).
 */
export async function resolveServices(): Promise<{
  services: Services;
  stop: () => Promise<void>;
}> {
  const mode = process.env.TEST_SERVICES ?? '';
  if (mode !== '' && mode !== 'containers') {
    throw new Error(
      `TEST_SERVICES=${mode} is not a known setting (TEST_SERVICES=containers, or unset)`,
    );
  }
  if (mode === 'containers') {
    for (const name of STACK_VARIABLES) Reflect.deleteProperty(process.env, name);
    return startContainers();
  }
  const { DATABASE_URL, REDIS_URL, KAFKA_BROKERS, REDIS_CLUSTER_NODES, REDIS_TLS_CA_FILE } =
    process.env;
  if (DATABASE_URL && REDIS_URL && KAFKA_BROKERS) {
    return {
      services: {
        source: 'env',
        databaseUrl: DATABASE_URL,
        redisUrl: REDIS_URL,
        kafkaBrokers: KAFKA_BROKERS,
        ...(REDIS_CLUSTER_NODES ? { redisClusterNodes: REDIS_CLUSTER_NODES } : {}),
        ...(REDIS_TLS_CA_FILE ? { redisTlsCaFile: REDIS_TLS_CA_FILE } : {}),
      },
      stop: () => Promise.resolve(),
    };
  }
  await run('bash', [path.join(REPO_ROOT, 'scripts/stack.sh'), 'start'], {
    cwd: REPO_ROOT,
    maxBuffer: 16 * 1024 * 1024,
    timeout: 600_000,
  });
  return {
    services: {
      source: 'native',
      databaseUrl: 'postgres://payments:payments@127.0.0.1:5432/payments',
      redisUrl: 'redis://127.0.0.1:6379',
      kafkaBrokers: '127.0.0.1:9092',
    },
    // The native stack is shared with `npm run up`; leave it running.
    stop: () => Promise.resolve(),
  };
}

/** The images (and versions) of docker-compose.yml. */
const IMAGES = { postgres: 'postgres:15', redis: 'redis:7', kafka: 'apache/kafka:3.9.1' };
/** Marks this suite's containers: the value is `<hostname>:<pid>` of the run that started them. */
const OWNER_LABEL = 'org.payments.test-services';
const OWNER = `${os.hostname()}:${process.pid}`;
/** Bounds for hangs, not speed claims: a cold Kafka on a loaded 2-core machine takes ~20 s. */
const STARTUP_TIMEOUT_MS = 180_000;

/**
 * Postgres, Redis and Kafka in containers of their own, configured as docker-compose.yml does:
 * the superuser `postgres` only bootstraps; scripts/db/create-roles.sql (via compose-init.sh, as
 * compose mounts it) creates the owner `payments` (the suite's admin) and the process logins.
 * Ryuk is off (its image cannot be pulled here): `stop` removes the containers, also when one of
 * them failed to start, and a run that was killed leaves containers the next run removes.
 */
async function startContainers(): Promise<{ services: Services; stop: () => Promise<void> }> {
  process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
  // With a daemon on this machine, the published ports are on 127.0.0.1. Said up front, it also
  // skips testcontainers' probe for the address of a daemon outside this container (it runs an
  // alpine container, which cannot be pulled without a registry).
  if (process.env.TESTCONTAINERS_HOST_OVERRIDE === undefined && (await dockerRunsHere())) {
    process.env.TESTCONTAINERS_HOST_OVERRIDE = '127.0.0.1';
  }
  const [
    { GenericContainer, Wait, getContainerRuntimeClient },
    { PostgreSqlContainer },
    { RedisContainer },
  ] = await Promise.all([
    import('testcontainers'),
    import('@testcontainers/postgresql'),
    import('@testcontainers/redis'),
  ]);
  const client = await getContainerRuntimeClient();
  await removeContainers(isOrphan);
  const host = client.info.containerRuntime.host;
  const labels = { [OWNER_LABEL]: OWNER };

  const started: StartedTestContainer[] = [];
  const stop = async () => {
    await Promise.allSettled(started.splice(0).map((container) => container.stop({ timeout: 0 })));
    // And those that never got as far as `started` (a wait that timed out, a port taken).
    await removeContainers((owner) => owner === OWNER);
  };
  const track = <T extends StartedTestContainer>(container: T): T => {
    started.push(container);
    return container;
  };

  // Kafka advertises the address clients use, so its host port is chosen before it starts.
  const startKafka = async () => {
    for (let attempt = 1; ; attempt += 1) {
      const kafkaPort = await freePort();
      const container = await new GenericContainer(IMAGES.kafka)
        .withLabels(labels)
        .withExposedPorts({ container: 9092, host: kafkaPort })
        .withEnvironment({
          KAFKA_NODE_ID: '1',
          KAFKA_PROCESS_ROLES: 'broker,controller',
          KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
          KAFKA_LISTENERS:
            'PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093,INTERNAL://0.0.0.0:29092',
          KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://${host}:${kafkaPort},INTERNAL://localhost:29092`,
          KAFKA_LISTENER_SECURITY_PROTOCOL_MAP:
            'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT',
          KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
          KAFKA_INTER_BROKER_LISTENER_NAME: 'INTERNAL',
          KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
          KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
          KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
          KAFKA_DEFAULT_REPLICATION_FACTOR: '1',
          KAFKA_MIN_INSYNC_REPLICAS: '1',
          KAFKA_NUM_PARTITIONS: '3',
          KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
          KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'true',
          KAFKA_HEAP_OPTS: '-Xms256m -Xmx512m',
        })
        // The broker is up once it logged this and its port answers (the port check is part of
        // every wait strategy).
        .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
        .withStartupTimeout(STARTUP_TIMEOUT_MS)
        .start()
        .catch((error: unknown) => {
          // The port was free when chosen; something (Docker's own port allocator) took it since.
          if (attempt < 3 && /already allocated|address already in use/i.test(String(error))) {
            return undefined;
          }
          throw error;
        });
      if (container) return { container: track(container), port: kafkaPort };
    }
  };
  const starts = [
    new PostgreSqlContainer(IMAGES.postgres)
      .withUsername('postgres')
      .withPassword('postgres')
      .withDatabase('postgres')
      .withLabels(labels)
      .withCopyFilesToContainer([
        {
          source: path.join(REPO_ROOT, 'scripts/db/compose-init.sh'),
          target: '/docker-entrypoint-initdb.d/10-payments-roles.sh',
          mode: 0o755,
        },
        {
          source: path.join(REPO_ROOT, 'scripts/db/create-roles.sql'),
          target: '/payments-db/create-roles.sql',
          mode: 0o644,
        },
      ])
      .withCommand(['postgres', '-c', 'max_connections=200', '-c', 'shared_buffers=256MB'])
      .withStartupTimeout(STARTUP_TIMEOUT_MS)
      .start()
      .then(track),
    new RedisContainer(IMAGES.redis)
      .withLabels(labels)
      .withCommand(['redis-server', '--save', '', '--appendonly', 'no'])
      .withStartupTimeout(STARTUP_TIMEOUT_MS)
      .start()
      .then(track),
    startKafka(),
  ] as const;

  const results = await Promise.allSettled(starts);
  const failed = results.find((result) => result.status === 'rejected');
  if (failed) {
    await stop();
    const reason: unknown = failed.reason;
    throw new Error(
      `TEST_SERVICES=containers: a container did not start (${IMAGES.postgres}, ${IMAGES.redis}, ` +
        `${IMAGES.kafka}; without a registry, bash .ci/images/prepare.sh builds them): ` +
        (reason instanceof Error ? reason.message : String(reason)),
      { cause: reason },
    );
  }
  const [postgres, redis, kafka] = await Promise.all(starts);
  process.stdout.write(
    `TEST_SERVICES=containers: ${IMAGES.postgres} on ${host}:${postgres.getPort()}, ` +
      `${IMAGES.redis} on ${host}:${redis.getPort()}, ${IMAGES.kafka} on ${host}:${kafka.port}\n`,
  );
  return {
    services: {
      source: 'testcontainers',
      databaseUrl: `postgres://payments:payments@${host}:${postgres.getPort()}/payments`,
      redisUrl: redis.getConnectionUrl(),
      kafkaBrokers: `${host}:${kafka.port}`,
    },
    stop,
  };
}

/** A container of an earlier run on this host whose process is gone (killed before its teardown). */
function isOrphan(owner: string): boolean {
  const [ownerHost, pid] = owner.split(':');
  return ownerHost === os.hostname() && !processAlive(Number(pid));
}

/**
 * Removes this suite's containers whose owner label (`<hostname>:<pid>`) matches, running or not.
 * Best effort: without the docker CLI nothing is removed.
 */
async function removeContainers(matches: (owner: string) => boolean): Promise<void> {
  let listing: string;
  try {
    ({ stdout: listing } = await run(
      'docker',
      [
        'ps',
        '--all',
        '--filter',
        `label=${OWNER_LABEL}`,
        '--format',
        `{{.ID}} {{.Label "${OWNER_LABEL}"}}`,
      ],
      { timeout: 30_000 },
    ));
  } catch {
    return;
  }
  const ids = listing
    .split('\n')
    .map((line) => line.trim().split(' '))
    .filter(([id, owner]) => id && owner && matches(owner))
    .map(([id]) => id as string);
  if (ids.length > 0) {
    await run('docker', ['rm', '--force', '--volumes', ...ids], { timeout: 60_000 }).catch(
      () => undefined,
    );
  }
}

/** The Docker daemon runs on this machine (not on the host of the container this runs in). */
async function dockerRunsHere(): Promise<boolean> {
  try {
    const { stdout } = await run('docker', ['info', '--format', '{{.Name}}'], { timeout: 30_000 });
    return stdout.trim() === os.hostname();
  } catch {
    return false;
  }
}

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
  return port;
}

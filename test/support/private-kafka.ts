import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createKafka, pingKafka } from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { REPO_ROOT } from './services.js';

/**
 * A single-node Kafka broker of its own for a test that stops and restarts Kafka, so the shared
 * broker other test files use is never touched. It runs the jars `scripts/stack.sh` installed,
 * on random free loopback ports with a temporary log directory.
 */
export interface PrivateKafka {
  /** `host:port` for KAFKA_BROKERS. */
  brokers: string;
  /** Starts the broker again on the same ports and data (after `stop`). */
  start: () => Promise<void>;
  /** SIGTERM (a clean broker shutdown), then waits for the process to exit. */
  stop: () => Promise<void>;
  /** SIGSTOP: the broker keeps its sockets open and answers nothing (a frozen broker). */
  freeze: () => void;
  /** SIGCONT after `freeze`. */
  thaw: () => void;
  /** Stops the broker and deletes its data. */
  destroy: () => Promise<void>;
}

const KAFKA_LIBS = path.join(process.env.STACK_DIR ?? path.join(REPO_ROOT, '.stack'), 'kafka/libs');
/** Startup is a few seconds; this only bounds a broker that will never come up. */
const READY_TIMEOUT_MS = 60_000;
/** A clean shutdown of an idle single node takes 1-2 s; kill it after this. */
const STOP_TIMEOUT_MS = 20_000;

/** Why a private broker cannot run here, or undefined when it can. */
export function privateKafkaUnavailable(): string | undefined {
  const hasJar =
    existsSync(KAFKA_LIBS) && readdirSync(KAFKA_LIBS).some((f) => /^kafka_2\.13-.*\.jar$/.test(f));
  if (!hasJar) return `no Kafka jars in ${KAFKA_LIBS} (run scripts/stack.sh install)`;
  if (spawnSync('java', ['-version'], { stdio: 'ignore' }).status !== 0) return 'no java on PATH';
  return undefined;
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

function java(args: string[], logFile?: string): ChildProcess {
  return spawn(
    'java',
    [
      // Small and quick to start: a test broker holds a few thousand messages.
      '-Xms128m',
      '-Xmx384m',
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      '-Djava.awt.headless=true',
      ...(logFile ? [`-Dkafka.logs.dir=${path.dirname(logFile)}`] : []),
      `-Dlog4j.configuration=file:${path.join(REPO_ROOT, 'scripts/kafka/log4j.properties')}`,
      '-cp',
      `${KAFKA_LIBS}/*`,
      ...args,
    ],
    { stdio: 'ignore', detached: false },
  );
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', resolve));
}

/**
 * A KRaft cluster id: 16 random bytes in URL-safe base64, as StorageTool random-uuid prints.
 * Like Kafka's own generator it never starts with '-': the tool's argument parser would read
 * such an id as an option and refuse it (1 run in 64 failed that way in CI).
 */
export function kraftClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

export async function startPrivateKafka(): Promise<PrivateKafka> {
  const dir = await mkdtemp(path.join(tmpdir(), 'private-kafka-'));
  const [port, controllerPort] = [await freePort(), await freePort()];
  const brokers = `127.0.0.1:${port}`;
  const conf = path.join(dir, 'server.properties');
  await writeFile(
    conf,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
      `listeners=PLAINTEXT://${brokers},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://${brokers}`,
      'controller.listener.names=CONTROLLER',
      'inter.broker.listener.name=PLAINTEXT',
      'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      `log.dirs=${path.join(dir, 'data')}`,
      'offsets.topic.replication.factor=1',
      // One partition: creating the default 50 costs seconds on the first consumer group.
      'offsets.topic.num.partitions=1',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'min.insync.replicas=1',
      'default.replication.factor=1',
      'num.partitions=3',
      'group.initial.rebalance.delay.ms=0',
      '',
    ].join('\n'),
  );
  const clusterId = kraftClusterId();
  const format = java(['kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', conf]);
  if ((await exited(format)) !== 0) throw new Error('kafka StorageTool format failed');

  const logFile = path.join(dir, 'logs', 'server.log');
  let broker: ChildProcess | undefined;
  const stopOnExit = () => broker?.kill('SIGKILL');
  process.once('exit', stopOnExit);

  const start = async () => {
    const child = java(['kafka.Kafka', conf], logFile);
    broker = child;
    const probe = createKafka(
      { KAFKA_BROKERS: [brokers], KAFKA_CLIENT_ID: 'private-kafka-probe' },
      createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' }),
    );
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (child.exitCode !== null) {
        const log = await readFile(logFile, 'utf8').catch(() => '');
        throw new Error(`private kafka exited ${child.exitCode}: ${log.slice(-2_000)}`);
      }
      const admin = probe.admin({ retry: { retries: 0 } });
      try {
        await admin.connect();
        await pingKafka(admin);
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200));
      } finally {
        await admin.disconnect().catch(() => undefined);
      }
    }
  };

  const stop = async () => {
    const child = broker;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited(child);
    clearTimeout(timer);
  };

  await start();
  return {
    brokers,
    start,
    stop,
    freeze: () => broker?.kill('SIGSTOP'),
    thaw: () => broker?.kill('SIGCONT'),
    destroy: async () => {
      broker?.kill('SIGCONT');
      await stop();
      process.off('exit', stopOnExit);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

// First: it replaces a kafkajs module before kafkajs loads (kafkajs-read-committed.ts).
import './kafkajs-read-committed.js';
import { Partitioners, type ICustomPartitioner, type Message, type RecordMetadata } from 'kafkajs';

/**
 * Which partition each message of a send was routed to, so a send can check that every one of
 * them was acknowledged. kafkajs (2.2) loses records on a retry after a leader move: a send to
 * several brokers keeps the answers of the brokers that answered the first try, and when a failed
 * partition's new leader is one of them, that partition's records are never sent, yet the send
 * resolves (seen in a chaos run: events marked published and absent from the topic after a
 * preferred-leader election). Keyed by the message object kafkajs hands the partitioner.
 */
const routed = new WeakMap<Message, { topic: string; partition: number }>();

/** The default partitioner (murmur2 of the key), recording where each message goes. */
export const recordingPartitioner: ICustomPartitioner = () => {
  const partition = Partitioners.DefaultPartitioner();
  return (args) => {
    const chosen = partition(args);
    routed.set(args.message, { topic: args.topic, partition: chosen });
    return chosen;
  };
};

/**
 * The topic-partitions that `messages` were routed to and that no answer in `acked` covers
 * ("topic:partition"). Messages a recording partitioner never saw are not judged.
 */
export function unacknowledgedPartitions(
  messages: readonly Message[],
  acked: readonly RecordMetadata[],
): string[] {
  const answered = new Set(acked.map((m) => `${m.topicName}:${String(m.partition)}`));
  const missing = new Set<string>();
  for (const message of messages) {
    const route = routed.get(message);
    if (route === undefined) continue;
    const id = `${route.topic}:${String(route.partition)}`;
    if (!answered.has(id)) missing.add(id);
  }
  return [...missing].sort();
}

// Reading a new topic's metadata on a cluster of several brokers (DESIGN 122). Part of the Kafka
// boundary (kafka.ts).

/**
 * What a broker answers while a new topic's metadata has not reached it yet: each broker applies
 * the controller's records on its own, so one may know a topic that another does not.
 */
const NOT_YET_KNOWN = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE']);
const POLL_MS = 100;
/** How long a new topic may take to be known, with a leader, on every broker. */
const KNOWN_TIMEOUT_MS = 30_000;

/**
 * Calls `read` until it answers something other than undefined, while it fails only because a
 * broker does not know the topics yet; any other error is thrown at once. After
 * KNOWN_TIMEOUT_MS: an Error saying `what` did not happen.
 */
export async function untilTopicsKnown<T>(
  what: string,
  read: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + KNOWN_TIMEOUT_MS;
  for (;;) {
    try {
      const answer = await read();
      if (answer !== undefined) return answer;
    } catch (error) {
      const type = (error as { type?: unknown }).type;
      if (typeof type !== 'string' || !NOT_YET_KNOWN.has(type)) throw error;
    }
    if (Date.now() >= deadline) {
      throw new Error(`${what} within ${String(KNOWN_TIMEOUT_MS)} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

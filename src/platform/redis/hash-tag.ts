/**
 * `{value}`: a Redis Cluster hash tag. Keys that one script or one multi-key command touches must
 * share it, else a Cluster answers CROSSSLOT (the slot is CRC16 of the text between the first `{`
 * and the next `}`). The service tags by merchant id: a merchant's lock, in-flight marker, cached
 * responses and rate-limit bucket share a slot, and merchants spread over the slots (DESIGN 123).
 * It follows REDIS_KEY_PREFIX and the key's kind, so the ACL key patterns (`<prefix>idem:*`,
 * `<prefix>rl:*`) still match; the prefix may hold no braces (the config refuses them).
 */
export function hashTag(value: string): string {
  return `{${value}}`;
}

/**
 * A token bucket in one Redis script, given to rate-limiter-flexible's RateLimiterRedis through
 * its `customIncrTtlLuaScript` option (the library's own script counts fixed windows, which let
 * twice the quota through around a window boundary; see DESIGN "Rate limits").
 *
 * The library calls it with KEYS[1] = the bucket, ARGV = [cost, whole seconds of the duration,
 * points, duration in seconds]; here points = the burst and duration = the seconds an empty
 * bucket takes to refill, so the rate is points / duration. It answers {consumed, ms} the way
 * the library reads its own script: `consumed` above `points` means refused. Allowed: consumed
 * = burst - tokens left and ms = until the bucket is full again. Refused: consumed = burst +
 * cost and ms = until `cost` tokens are back. The clock is Redis' own (TIME), so replicas with
 * skewed clocks share one bucket correctly; Redis 5+ replicates the script's effects, not the
 * script, so TIME is allowed before writes.
 */
export const TOKEN_BUCKET_SCRIPT = `
local cost = tonumber(ARGV[1])
local burst = tonumber(ARGV[3])
local refill_ms = tonumber(ARGV[4]) * 1000
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * burst / refill_ms)
local allowed = tokens >= cost
if allowed then tokens = tokens - cost end
local to_full = math.ceil((burst - tokens) * refill_ms / burst)
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.max(to_full, 1))
if allowed then
  return {burst - math.floor(tokens), to_full}
end
return {burst + cost, math.ceil((cost - tokens) * refill_ms / burst)}
`;

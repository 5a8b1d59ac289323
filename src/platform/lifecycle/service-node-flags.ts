/**
 * The Node flags every service process runs with (`npm start*`, `npm run up`, the image's entry
 * point, the fuzzer, chaos, the benchmarks and the tests' role processes), DESIGN 25:
 *
 * `--max-old-space-size=1024`: a heap limit under 2 GB makes V8 grow the old generation by a
 * factor of about 1.6 after each full collection instead of 4. The API's live heap is about
 * 20 MB; under load its old space used to fill with ~70 MB of promoted request garbage before
 * a collection. With the limit the API's peak RSS fell from 179-185 MB to 124-131 MB, at a CPU
 * cost inside the measurement's noise in four interleaved runs (about +1-3%), and 1 GB leaves 50
 * times the live heap for bursts.
 *
 * Command lines cannot import this module: package.json, scripts/up.sh,
 * scripts/docker-entrypoint.sh (the image's) and tools/fuzz/run.sh spell the flags out, and
 * test/unit/service-node-flags.test.ts checks that every one of them does.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-old-space-size=1024'];

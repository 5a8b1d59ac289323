import { defineConfig } from 'vitest/config';

const shared = {
  // A run is only trusted when every test passed first time; never retry to green.
  retry: 0,
};

export default defineConfig({
  test: {
    projects: [
      {
        test: { ...shared, name: 'unit', include: ['test/unit/**/*.test.ts'] },
      },
      {
        test: {
          ...shared,
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          // Finds or starts Postgres, Redis and Kafka, builds dist/, migrates a template database.
          globalSetup: ['test/support/global-setup.ts'],
          // Files run in parallel, each isolated by its own database, topics and Redis prefix.
          pool: 'forks',
          // Bounds for hangs, not speed claims: the first metadata round trip after a topic is
          // created can take seconds on a loaded 2-core machine.
          testTimeout: 60_000,
          hookTimeout: 180_000,
        },
      },
      // The HA topology's tests (test/ha/): only with STACK_TOPOLOGY=ha, which `npm run test:ha`
      // sets with the rest of `STACK_TOPOLOGY=ha scripts/stack.sh env` (the topology must be
      // running: `npm run stack:ha`). `npm test` on the single-node stack never includes them.
      ...(process.env.STACK_TOPOLOGY === 'ha'
        ? [
            {
              test: {
                ...shared,
                name: 'ha',
                include: ['test/ha/**/*.test.ts'],
                pool: 'forks' as const,
                // They kill and promote the topology's nodes: one file at a time.
                fileParallelism: false,
                testTimeout: 300_000,
                hookTimeout: 300_000,
              },
            },
          ]
        : []),
    ],
  },
});

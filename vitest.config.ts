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
    ],
  },
});

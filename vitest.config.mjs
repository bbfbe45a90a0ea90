import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['__test__/**/*.test.mjs'],
    // Native addons and worker threads have a segfault history: one process per file.
    pool: 'forks',
    globalSetup: ['__test__/setup/xtdb.mjs'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // XTDB start-up (cold JVM) happens in globalSetup, outside these limits.
  },
});

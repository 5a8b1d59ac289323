import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { migrateUp } from '../../src/platform/database/migration-runner.js';
import {
  createScratchDatabase,
  dropScratchDatabasesWithPrefix,
} from '../../tools/support/scratch-database.js';
import { REPO_ROOT, resolveServices, type Services } from './services.js';

const run = promisify(execFile);

declare module 'vitest' {
  export interface ProvidedContext {
    services: Services;
    /** A migrated database that each test file clones (CREATE DATABASE ... TEMPLATE). */
    templateDatabase: string;
    /** Prefix of every database created in this run, so teardown can drop them all. */
    runId: string;
  }
}

/** Compiles one tsconfig (the service's dist/, or the tools' dist-tools/). */
function compile(project: string) {
  return run(
    process.execPath,
    [path.join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', project],
    { cwd: REPO_ROOT },
  );
}

/**
 * Once per `vitest run`: find the services, compile dist/ (process tests run the real entry
 * points) and dist-tools/ (the verifier's tests run `npm run verify`'s entry point), and migrate
 * a template database that every test file clones for isolation.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // One after the other: two tsc at once on a 2-core machine slow everything else down.
  const build = compile('tsconfig.build.json').then(() => compile('tools/tsconfig.json'));
  const { services, stop } = await resolveServices();
  const runId = `t${Date.now().toString(36)}${process.pid.toString(36)}`;
  let template: string;
  try {
    template = await migratedTemplate(services.databaseUrl, runId);
    await build;
  } catch (error) {
    // No teardown runs when setup fails: stop what resolveServices started (containers).
    await stop();
    throw error;
  }
  project.provide('services', services);
  project.provide('templateDatabase', template);
  project.provide('runId', runId);

  return async () => {
    await dropScratchDatabasesWithPrefix(services.databaseUrl, runId);
    await stop();
  };
}

/** The service roles exist, then a migrated template database: returns its name. */
async function migratedTemplate(adminUrl: string, runId: string): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await ensureServiceRoles(admin);
  } finally {
    await admin.end();
  }
  const template = await createScratchDatabase(adminUrl, `${runId}_template`);
  const logger = createLogger({ LOG_LEVEL: 'warn', LOG_FORMAT: 'json' });
  await migrateUp(template.url, logger);
  return template.name;
}

/**
 * The per-process logins (scripts/db/create-roles.sql) exist before the template is migrated, so
 * its grants reach them. The native stack creates them; a container's superuser creates them
 * here. An admin that may not create roles leaves them missing (database-roles.test.ts fails).
 */
async function ensureServiceRoles(admin: pg.Client): Promise<void> {
  for (const role of ['payments_api', 'payments_relay', 'payments_settlement']) {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
    if (rowCount) continue;
    try {
      await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${role}'`);
    } catch (error) {
      if ((error as { code?: string }).code !== '42501') throw error;
    }
  }
}

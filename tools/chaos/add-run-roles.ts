import { randomBytes } from 'node:crypto';
import { freePort } from '../support/free-port.js';
import { ROLES, type RoleFleet, type Role } from './role-fleet.js';
import { roleSettings } from './role-settings.js';
import { webhookRoleEnv } from './webhook-receivers.js';

/**
 * Adds the run's processes to `fleet` (not started): one acquirer (the simulator, its books on its
 * own login) and `processes` of each role, each on free ports with `roleEnv(role)` (its own
 * login). Returns the APIs' addresses and the acquirer's internal listener.
 */
export async function addRunRoles(
  fleet: RoleFleet,
  roleEnv: (role: Role) => NodeJS.ProcessEnv,
  processes: number,
): Promise<{ apiUrls: string[]; acquirerAdminUrl: string }> {
  const apiUrls: string[] = [];
  const [acquirerPort, acquirerAdminPort] = [await freePort(), await freePort()];
  const acquirerUrl = `http://127.0.0.1:${String(acquirerPort)}`;
  // The bearer token the acquirer requires and settlement sends (DESIGN 121): one per run.
  const acquirerToken = randomBytes(24).toString('base64url');
  fleet.add('acquirer', 1, {
    ...roleEnv('acquirer'),
    ACQUIRER_TOKEN: acquirerToken,
    ACQUIRER_PORT: String(acquirerPort),
    METRICS_PORT: String(acquirerAdminPort),
  });
  for (const role of ROLES) {
    for (let i = 1; i <= processes; i++) {
      const [port, metricsPort] = [await freePort(), await freePort()];
      if (role === 'api') apiUrls.push(`http://127.0.0.1:${port}`);
      fleet.add(role, i, {
        ...roleEnv(role),
        ...webhookRoleEnv(role),
        PORT: String(port),
        METRICS_PORT: String(metricsPort),
        ...roleSettings(role, acquirerUrl),
        ...(role === 'settlement' ? { ACQUIRER_TOKEN: acquirerToken } : {}),
      });
    }
  }
  return { apiUrls, acquirerAdminUrl: `http://127.0.0.1:${String(acquirerAdminPort)}` };
}

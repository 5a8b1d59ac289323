import { ROOT } from './bench-process.js';
import { stackSubject, startCpuWindow } from './cpu-usage.js';

/** CPU of one measured load run of the API: seconds used, and ms per accepted payment. */
export interface ApiCpu {
  /** Payments the run accepted (202). */
  payments: number;
  seconds: { api: number; postgres: number; redis: number };
  msPerPayment: { api: number; postgres: number; redis: number; total: number };
}

/**
 * Starts measuring the CPU of the API process `apiPid` and of the bench stack's Postgres (the
 * postmaster and every backend below it) and Redis (scripts/stack.sh pid, so another stack on
 * the machine is not counted); the returned function stops and divides by the payments the
 * run accepted. Issue 29's first target: API + Postgres + Redis CPU per new payment.
 */
export async function startApiCpuWindow(
  apiPid: number,
): Promise<(payments: number) => Promise<ApiCpu>> {
  const stop = await startCpuWindow({
    api: { pids: [apiPid] },
    postgres: await stackSubject(ROOT, 'postgres', 'postgres'),
    redis: await stackSubject(ROOT, 'redis', 'redis-server'),
  });
  return async (payments) => {
    const used = await stop();
    const seconds = { api: used.api ?? 0, postgres: used.postgres ?? 0, redis: used.redis ?? 0 };
    const per = (value: number) =>
      payments > 0 ? Math.round((value * 1_000_000) / payments) / 1000 : 0;
    return {
      payments,
      seconds,
      msPerPayment: {
        api: per(seconds.api),
        postgres: per(seconds.postgres),
        redis: per(seconds.redis),
        total: per(seconds.api + seconds.postgres + seconds.redis),
      },
    };
  };
}

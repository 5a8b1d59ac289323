import type { PlannedFault } from './fault-plan.js';

/** When a fault began and when the system was whole again (thawed, restarted, answering). */
export interface FaultWindow {
  fault: PlannedFault;
  startMs: number;
  endMs: number;
}

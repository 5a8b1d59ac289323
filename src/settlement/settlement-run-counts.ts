/** What one settlement pass did: what `runOnce` returns and tests assert on. */
export interface SettlementRunCounts {
  claimed: number;
  settled: number;
  failed: number;
  retried: number;
  deadLettered: number;
}

export function emptySettlementRunCounts(): SettlementRunCounts {
  return { claimed: 0, settled: 0, failed: 0, retried: 0, deadLettered: 0 };
}

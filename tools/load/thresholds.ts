import type { LoadMetrics } from './load-metrics.js';

/** One threshold as judged: the metric, its rule in k6's syntax, the value seen, the verdict. */
export interface ThresholdResult {
  metric: string;
  rule: string;
  value: number | null;
  ok: boolean;
}

const RULE =
  /^\s*(count|rate|avg|med|max|p\(\d+(?:\.\d+)?\))\s*(==|!=|<=|>=|<|>)\s*(-?\d+(?:\.\d+)?)\s*$/;

/** Whether `value` meets `operator` `bound`. */
function meets(value: number, operator: string, bound: number): boolean {
  switch (operator) {
    case '==':
      return value === bound;
    case '!=':
      return value !== bound;
    case '<':
      return value < bound;
    case '<=':
      return value <= bound;
    case '>':
      return value > bound;
    default:
      return value >= bound;
  }
}

/**
 * Judges a scenario's thresholds (k6's syntax: "count==0", "rate==1", "p(99)<250") on what the
 * driver measured. A rule the driver cannot read is an error, not a pass: a typo in a scenario
 * must not turn an invariant off. A latency rule on requests that never ran has nothing to
 * judge and passes, as in k6.
 */
export function judgeThresholds(
  thresholds: Readonly<Record<string, readonly string[]>>,
  metrics: LoadMetrics,
): ThresholdResult[] {
  const results: ThresholdResult[] = [];
  for (const [metric, rules] of Object.entries(thresholds)) {
    for (const rule of rules) {
      const match = RULE.exec(rule);
      if (!match) throw new Error(`threshold ${metric}: cannot read "${rule}"`);
      const [, aggregation = '', operator = '', bound = ''] = match;
      const value = metrics.value(metric, aggregation);
      if (value === undefined && !metric.startsWith('http_req_duration{')) {
        throw new Error(`threshold ${metric}: no such metric (declare it in the scenario)`);
      }
      results.push({
        metric,
        rule,
        value: value ?? null,
        ok: value === undefined || meets(value, operator, Number(bound)),
      });
    }
  }
  return results;
}

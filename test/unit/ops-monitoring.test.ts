import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import '../../src/http/admission-limit.js';
import '../../src/http/http-metrics.js';
import '../../src/outbox/outbox-metrics.js';
import '../../src/jobs/job-metrics.js';
import '../../src/jobs/lease-lost.js';
import '../../src/jobs/dead-letters/dead-letter-metrics.js';
import '../../src/acquirer/acquirer-metrics.js';
import '../../src/platform/lifecycle/readiness-metrics.js';
import '../../src/refunds/refund-metrics.js';
import '../../src/settlement/settlement-metrics.js';
import '../../src/acquirer/acquirer-breaker.js';
import '../../src/webhooks/webhook-metrics.js';
import '../../src/webhooks/webhook-endpoint-metrics.js';
import { metricsRegistry } from '../../src/platform/telemetry/metrics.js';

/**
 * The dashboard and alert rules in ops/ only name metrics the service exports, and every alert
 * has a runbook section. (promtool could not be built here: `go install` of the prometheus
 * module is refused for its replace directives, see DESIGN.)
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

interface Rule {
  alert?: string;
  expr?: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules = (
  parse(read('ops/prometheus/payments-alerts.yaml')) as {
    groups: { name: string; rules: Rule[] }[];
  }
).groups.flatMap((group) => group.rules);

interface Panel {
  type: string;
  targets?: { expr: string }[];
}
const dashboard = JSON.parse(read('ops/grafana/payments-service.json')) as {
  uid: string;
  panels: Panel[];
};

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS_TOO = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/** The metric names a PromQL expression reads (selectors; not functions, labels or keywords). */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = [...stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)]
    // A name followed by `(` is a function or an aggregation, not a metric.
    .filter((match) => !/^\s*\(/.test(stripped.slice(match.index + match[0].length)))
    .map((match) => match[0])
    .filter((name) => !KEYWORDS.has(name) && !KEYWORDS_TOO.has(name.toLowerCase()));
  return [...new Set(names)];
}

async function exportedNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const metric of await metricsRegistry.getMetricsAsJSON()) {
    names.add(metric.name);
    if (String(metric.type) === 'histogram') {
      for (const suffix of ['_bucket', '_count', '_sum']) names.add(metric.name + suffix);
    }
  }
  return names;
}

/** GitHub's anchor of every heading of docs/operations.md. */
function anchors(): Set<string> {
  return new Set(
    [...read('docs/operations.md').matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
      (m[1] ?? '')
        .toLowerCase()
        .replace(/[^a-z0-9 _-]/g, '')
        .replace(/ /g, '-'),
    ),
  );
}

describe('ops/prometheus alert rules', () => {
  it('has the alerts the operations guide promises, each complete and with a runbook section', () => {
    expect(rules.map((rule) => rule.alert)).toEqual([
      'OutboxLagHigh',
      'OutboxRowsParked',
      'SettlementDeadLetters',
      'ApiHigh5xxRate',
      'ApiShedding',
      'SettlementBacklogHigh',
      'RefundBacklogHigh',
      'AcquirerBreakerOpen',
      'JobMetricsProbeFailing',
      'DependencyDown',
      'WebhookDeliveryLag',
      'WebhookDeliveriesFailing',
      'WebhookPendingDeliveryOld',
    ]);
    const known = anchors();
    for (const rule of rules) {
      expect(rule.expr, rule.alert).toBeTruthy();
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
      expect(rule.labels?.severity, rule.alert).toMatch(/^(page|ticket)$/);
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      const [file, anchor] = (rule.annotations?.runbook_url ?? '').split('#');
      expect(file, rule.alert).toBe('docs/operations.md');
      expect(known.has(anchor ?? ''), `${rule.alert}: #${anchor ?? ''}`).toBe(true);
    }
  });

  it('uses only metrics the service exports', async () => {
    const exported = await exportedNames();
    const used = rules.flatMap((rule) => metricNames(rule.expr ?? ''));
    expect(used.length).toBeGreaterThan(5);
    expect(used.filter((name) => !exported.has(name))).toEqual([]);
  });
});

describe('ops/grafana dashboard', () => {
  it('is importable JSON whose panels query only metrics the service exports', async () => {
    expect(dashboard.uid).toBe('payments-service');
    const exported = await exportedNames();
    const exprs = dashboard.panels.flatMap((panel) => panel.targets ?? []).map((t) => t.expr);
    expect(exprs.length).toBeGreaterThan(10);
    const used = exprs.flatMap(metricNames);
    expect(used.filter((name) => !exported.has(name))).toEqual([]);
    for (const name of [
      'http_server_request_duration_seconds_count',
      'outbox_backlog_rows',
      'outbox_parked_rows',
      'jobs',
      'jobs_ready',
      'jobs_oldest_ready_age_seconds',
      'jobs_attempts_total',
      'jobs_lease_lost_total',
      'jobs_probe_up',
      'settlement_dead_letters_total',
      'dependency_up',
      'webhook_deliveries_total',
      'webhook_oldest_due_delivery_age_seconds',
      'webhook_oldest_pending_delivery_age_seconds',
      'webhook_endpoints_disabled',
    ]) {
      expect(used, name).toContain(name);
    }
  });

  it('reads metric names out of PromQL (the check above can fail)', () => {
    expect(
      metricNames('sum by (le, route) (rate(foo_bucket{status=~"5.."}[5m])) / max(bar) > 0.01'),
    ).toEqual(['foo_bucket', 'bar']);
  });
});

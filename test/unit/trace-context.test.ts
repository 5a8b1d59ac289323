import { describe, expect, it } from 'vitest';
import { toKafkaRecord } from '../../src/outbox/cloud-event.js';
import { traceContextHeaders, traceContextOfEnvelope } from '../../src/outbox/trace-context.js';
import { startTracing } from '../../src/platform/telemetry/start-tracing.js';
import { ConfigError } from '../../src/platform/config/config-error.js';
import {
  checkOtlpEndpoints,
  checkSamplerSettings,
  enabledInstrumentations,
  otlpProtocol,
  traceExporterNames,
} from '../../src/platform/telemetry/tracing-env.js';
import { toDeadLetter } from '../../src/jobs/dead-letters/dead-letter.js';

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const event = {
  eventId: '7d3f1c2e-8a4b-5c6d-9e0f-1a2b3c4d5e6f',
  eventType: 'payment.created',
  aggregateId: '0190d7a4-0000-7000-8000-000000000001',
  data: { id: '0190d7a4-0000-7000-8000-000000000001' },
  createdAt: new Date('2026-01-01T00:00:00Z'),
};

describe('trace context on Kafka records', () => {
  it('when the row has a trace context, then the envelope and ce_ headers carry it, byte-identical on every call', () => {
    const traced = { ...event, traceparent: TRACEPARENT, tracestate: 'vendor=abc' };
    const record = toKafkaRecord(traced);
    expect(record.headers.ce_traceparent).toBe(TRACEPARENT);
    expect(record.headers.ce_tracestate).toBe('vendor=abc');
    expect(traceContextOfEnvelope(record.value)).toEqual({
      traceparent: TRACEPARENT,
      tracestate: 'vendor=abc',
    });
    expect(toKafkaRecord(traced)).toEqual(record);
  });

  it('when the row has none, then the record has no trace attribute or header', () => {
    const record = toKafkaRecord({ ...event, traceparent: null, tracestate: 'orphan=1' });
    expect(Object.keys(record.headers).filter((h) => h.includes('trace'))).toEqual([]);
    expect(record.value).not.toContain('trace');
    expect(traceContextOfEnvelope(record.value)).toEqual({ traceparent: null, tracestate: null });
  });

  it('when a record is dead-lettered, then the dead letter keeps ce_traceparent', () => {
    const value = toKafkaRecord({ ...event, traceparent: TRACEPARENT }).value;
    const source = { topic: 'payments', partition: 0, offset: '7', key: 'k', value };
    const reason = {
      eventId: event.eventId,
      errorClass: 'acquirer_timeout',
      errorMessage: 'slow',
      attempts: 5,
      firstFailureAt: new Date(),
      lastFailureAt: new Date(),
    };
    const dead = toDeadLetter(source, reason);
    expect(dead.headers.ce_traceparent).toBe(TRACEPARENT);
    expect(dead.value).toBe(value);
    expect(traceContextHeaders('not json "traceparent"')).toEqual({});
  });
});

describe('startTracing', () => {
  it('when no exporter is configured or the SDK is disabled, then tracing stays off', () => {
    expect(startTracing('t', {}, {})).toBeNull();
    expect(startTracing('t', {}, { OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
    expect(
      startTracing('t', {}, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }),
    ).toBeNull();
  });
});

describe('otlpProtocol', () => {
  it('when nothing is set, then http/protobuf (the spec default); the traces setting wins over the general one', () => {
    expect(otlpProtocol({})).toBe('http/protobuf');
    expect(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBe('http/json');
    expect(
      otlpProtocol({
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: ' HTTP/Protobuf ',
      }),
    ).toBe('http/protobuf');
  });

  it('when grpc or anything else is asked for, then one error naming the setting, before any provider is registered', () => {
    expect(() => otlpProtocol({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })).toThrow(
      /^invalid configuration: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be http\/protobuf or http\/json .*"grpc"$/,
    );
    expect(() =>
      startTracing('t', {}, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'json' }),
    ).toThrow(ConfigError);
  });
});

describe('enabledInstrumentations', () => {
  it('when nothing is set, then pg and ioredis', () => {
    expect(enabledInstrumentations({})).toEqual(['pg', 'ioredis']);
  });

  it('when OTEL_NODE_DISABLED_INSTRUMENTATIONS names one, then only the other; names this build does not ship are ignored', () => {
    expect(
      enabledInstrumentations({ OTEL_NODE_DISABLED_INSTRUMENTATIONS: ' fs, IORedis ,dns' }),
    ).toEqual(['pg']);
    expect(enabledInstrumentations({ OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'pg,ioredis' })).toEqual(
      [],
    );
  });

  it('when OTEL_NODE_ENABLED_INSTRUMENTATIONS lists some, then only those, minus the disabled ones', () => {
    expect(enabledInstrumentations({ OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'http,ioredis' })).toEqual(
      ['ioredis'],
    );
    expect(
      enabledInstrumentations({
        OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'pg,ioredis',
        OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'pg',
      }),
    ).toEqual(['ioredis']);
  });
});

describe('traceExporterNames', () => {
  it('when unset, empty, none or the SDK is disabled, then no exporter (tracing off)', () => {
    expect(traceExporterNames({})).toEqual([]);
    expect(traceExporterNames({ OTEL_TRACES_EXPORTER: ' ' })).toEqual([]);
    expect(traceExporterNames({ OTEL_TRACES_EXPORTER: 'none' })).toEqual([]);
    expect(traceExporterNames({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'TRUE' })).toEqual(
      [],
    );
  });

  it('when a list is given, then each exporter once', () => {
    expect(traceExporterNames({ OTEL_TRACES_EXPORTER: ' Console, otlp ,otlp' })).toEqual([
      'otlp',
      'console',
    ]);
  });

  it('when an exporter this build does not ship is named, then one error naming the setting', () => {
    expect(() => traceExporterNames({ OTEL_TRACES_EXPORTER: 'otlp,zipkin' })).toThrow(
      /^invalid configuration: OTEL_TRACES_EXPORTER must list otlp or console \(or be none\); got "otlp,zipkin"$/,
    );
    expect(() => traceExporterNames({ OTEL_TRACES_EXPORTER: 'none,otlp' })).toThrow(ConfigError);
  });
});

describe('checkSamplerSettings', () => {
  it('when the sampler is one of the spec values, with a ratio from 0 to 1 or none, then it passes', () => {
    for (const env of [
      {},
      { OTEL_TRACES_SAMPLER: 'always_off' },
      { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
      { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1' },
      { OTEL_TRACES_SAMPLER: 'traceidratio' },
      // The argument means nothing to the other samplers.
      { OTEL_TRACES_SAMPLER: 'always_on', OTEL_TRACES_SAMPLER_ARG: 'x' },
    ]) {
      expect(() => {
        checkSamplerSettings(env);
      }, JSON.stringify(env)).not.toThrow();
    }
  });

  it('when the sampler is unknown or its ratio is not one, then one error naming the setting (the SDK would sample everything)', () => {
    expect(() => {
      checkSamplerSettings({ OTEL_TRACES_SAMPLER: 'ParentBased_TraceIdRatio' });
    }).toThrow(/^invalid configuration: OTEL_TRACES_SAMPLER must be one of always_on, /);
    for (const arg of ['1.5', '-0.1', '10%', 'abc']) {
      expect(() => {
        checkSamplerSettings({
          OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
          OTEL_TRACES_SAMPLER_ARG: arg,
        });
      }, arg).toThrow(
        /^invalid configuration: OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1/,
      );
    }
    expect(() =>
      startTracing('t', {}, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' }),
    ).toThrow(ConfigError);
  });
});

describe('checkOtlpEndpoints', () => {
  it('when an endpoint is an http(s) URL or unset, then it passes; otherwise one error naming it (the exporter would send to localhost)', () => {
    expect(() => {
      checkOtlpEndpoints({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces',
      });
    }).not.toThrow();
    expect(() => {
      checkOtlpEndpoints({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' });
    }).toThrow(/^invalid configuration: OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL/);
    expect(() =>
      startTracing(
        't',
        {},
        { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' },
      ),
    ).toThrow(/OTEL_EXPORTER_OTLP_TRACES_ENDPOINT/);
  });
});

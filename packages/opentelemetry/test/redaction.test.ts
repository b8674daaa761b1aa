import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createRedactor, MemoryStore } from '@stepwise/core';
import { secretForms } from '@stepwise/core/engine';
import { createTestTools } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { describe, expect, it } from 'vitest';
import { openTelemetryListener } from '../src/index.js';

const SECRET = 'Zq7-hunter2-Secret-42x';

/** The text as written, without line breaks (real or escaped), and with %XX decoded. */
function views(text: string): string[] {
  const joined = text.replace(/\r|\n|\\r|\\n/g, '');
  const decoded = joined.replace(/%[0-9a-f]{2}/gi, (encoded) =>
    String.fromCharCode(Number.parseInt(encoded.slice(1), 16)),
  );
  return [text, joined, decoded].map((view) => view.toLowerCase());
}

function leaks(text: string): string[] {
  const seen = views(text);
  return secretForms(SECRET).filter((form) => seen.some((view) => view.includes(form.toLowerCase())));
}

describe('spans carry no secret', () => {
  it('in names, attributes, events or status messages: plan id, step ids, goal, args, outputs and errors', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const listener = openTelemetryListener({ tracer: provider.getTracer('redaction'), recordContent: true });
    const engine = dagEngine({
      tools: createTestTools().registry,
      store: new MemoryStore(),
      redactor: createRedactor({ secrets: [SECRET] }),
      onEvent: listener,
    });
    const percent = [...Buffer.from(SECRET)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join('');
    const plan = {
      id: `plan-${SECRET}`,
      goal: `deploy with ${SECRET}`,
      steps: [
        {
          id: `step-${SECRET}`,
          tool: 'echo',
          args: { value: [SECRET, percent, `${SECRET.slice(0, 6)}\n${SECRET.slice(6)}`] },
        },
        {
          id: 'fail',
          tool: 'fail',
          args: { message: `could not log in with ${SECRET.slice(0, 9)}\r\n${SECRET.slice(9)}` },
        },
      ],
    };
    const result = await engine.run(plan).result;
    expect(result.status).toBe('failed');
    expect(result.planId).toBe('plan-[REDACTED]');

    const spans = exporter.getFinishedSpans();
    expect(spans.map((span) => span.name)).toEqual(
      expect.arrayContaining(['run plan-[REDACTED]', 'step step-[REDACTED]']),
    );
    const recorded = spans.map((span) => ({
      name: span.name,
      attributes: span.attributes,
      status: span.status,
      events: span.events.map((event) => ({ name: event.name, attributes: event.attributes })),
    }));
    const text = JSON.stringify(recorded);
    expect(text).toContain('[REDACTED]');
    expect(leaks(text)).toEqual([]);
  });
});

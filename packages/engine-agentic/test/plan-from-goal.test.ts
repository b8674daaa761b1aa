import { MemoryStore, readAll, StepwiseError } from '@stepwise/core';
import { RunJournal } from '@stepwise/core/engine';
import { createTestTools } from '@stepwise/core/testing';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { fromAISDK, openAICompatible, PlannerErrorCodes, planFromGoal, SUBMIT_PLAN } from '../src/index.js';
import { type FakeOpenAIServer, scriptedModel, startFakeOpenAIServer, toolCall } from '../src/testing/index.js';

const goal = 'write two notes, the second after the first';
const validPlan = {
  id: 'plan_notes',
  goal,
  steps: [
    { id: 'first', tool: 'note', args: { text: 'one' } },
    { id: 'second', tool: 'note', args: { text: 'two' }, dependsOn: ['first'] },
  ],
};

async function caught(promise: Promise<unknown>): Promise<StepwiseError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!StepwiseError.isInstance(error)) throw new Error(`expected a StepwiseError, got ${String(error)}`);
  return error;
}

function journal() {
  const store = new MemoryStore();
  return { store, journal: new RunJournal({ runId: 'run_planner', store }) };
}

describe('planFromGoal with the scripted model', () => {
  it('sends every problem of an invalid first plan back and returns the repaired plan', async () => {
    const model = scriptedModel([
      toolCall(SUBMIT_PLAN, {
        goal,
        steps: [
          { id: 'first', tool: 'write_note', args: { text: 'one' } },
          { id: 'second', tool: 'note', args: { text: 'two' }, dependsOn: ['frist'] },
        ],
      }),
      toolCall(SUBMIT_PLAN, validPlan),
    ]);
    const { store, journal: planJournal } = journal();
    const result = await planFromGoal({
      goal,
      tools: createTestTools().registry,
      model,
      context: 'notes are short',
      journal: planJournal,
    });

    expect(result.plan.steps.map((step) => step.id)).toEqual(['first', 'second']);
    expect(result.order).toEqual(['first', 'second']);
    expect(result.calls.map((call) => call.problems.length)).toEqual([2, 0]);

    const [first, second] = model.requests;
    expect(first?.tools.map((tool) => tool.name)).toEqual([SUBMIT_PLAN]);
    expect(JSON.stringify(first?.tools[0]?.parameters)).toContain('dependsOn');
    const opening = first?.messages[1]?.content ?? '';
    expect(opening).toContain(goal);
    expect(opening).toContain('notes are short');
    expect(opening).toContain('- note:');
    // The repair request answers the submit_plan call with both problems: code, JSON path, message.
    const answer = second?.messages.at(-1);
    expect(answer).toMatchObject({ role: 'tool', toolCallId: 'call_0_0', name: SUBMIT_PLAN });
    expect(answer?.content).toContain('E201 unknown-tool at /steps/0/tool');
    expect(answer?.content).toContain('E001 unknown-dependency at /steps/1/dependsOn/0');

    await planJournal.close();
    const events = await readAll(store, 'run_planner');
    expect(events.map((event) => event.type)).toEqual(['model-call', 'model-call']);
    expect(events[0]).toMatchObject({ stepId: 'plan', turn: 0, model: 'scripted' });
    expect(JSON.stringify(events[0])).toContain('/steps/1/dependsOn/0');
    expect(events[1]).toMatchObject({ turn: 1, response: { problems: [] } });
  });

  it('accepts a plan written as fenced JSON text and fills the id the model left out', async () => {
    const { id: _id, ...withoutId } = validPlan;
    const model = scriptedModel([{ text: `Here is the plan:\n\`\`\`json\n${JSON.stringify(withoutId)}\n\`\`\`` }]);
    const result = await planFromGoal({ goal, tools: createTestTools().registry, model });
    expect(result.plan.id).toMatch(/^plan_[0-9a-f]{12}$/);
    expect(result.calls).toHaveLength(1);
  });

  it('fails with E408 when the model never answers with JSON, after journaling every answer', async () => {
    const model = scriptedModel([
      { text: 'I would first write a note and then another.' },
      toolCall(SUBMIT_PLAN, '{"steps": [oops'),
    ]);
    const { store, journal: planJournal } = journal();
    const error = await caught(
      planFromGoal({ goal, tools: createTestTools().registry, model, maxRepairs: 1, journal: planJournal }),
    );
    expect(error.code).toBe(PlannerErrorCodes.ANSWER_NOT_JSON);
    expect(error.message).toContain('not a JSON object');
    expect(error.details).toMatchObject({ attempts: 2 });
    // The first non-JSON answer was sent back as a problem, not silently dropped.
    expect(model.requests[1]?.messages.at(-1)?.content).toContain('E408 json-syntax');
    await planJournal.close();
    expect(await readAll(store, 'run_planner')).toHaveLength(2);
  });

  it('repairs a non-JSON answer when the next one is a plan', async () => {
    const model = scriptedModel([{ text: 'Sure!' }, toolCall(SUBMIT_PLAN, validPlan)]);
    const result = await planFromGoal({ goal, tools: createTestTools().registry, model });
    expect(result.plan.id).toBe('plan_notes');
    expect(model.requests[1]?.messages.at(-1)).toMatchObject({ role: 'user' });
  });

  it('fails with E409 naming the cycle when every answer has one', async () => {
    const cyclic = {
      id: 'plan_cycle',
      steps: [
        { id: 'a', tool: 'note', args: { text: 'a' }, dependsOn: ['c'] },
        { id: 'b', tool: 'note', args: { text: 'b' }, dependsOn: ['a'] },
        { id: 'c', tool: 'note', args: { text: 'c' }, dependsOn: ['b'] },
      ],
    };
    const model = scriptedModel(() => toolCall(SUBMIT_PLAN, cyclic));
    const error = await caught(planFromGoal({ goal, tools: createTestTools().registry, model, maxRepairs: 2 }));
    expect(error.code).toBe(PlannerErrorCodes.REPAIRS_EXHAUSTED);
    expect(model.calls).toBe(3);
    const problems = (error.details?.problems ?? []) as { kind: string; message: string }[];
    expect(problems.map((problem) => problem.kind)).toContain('dependency-cycle');
    expect(error.message).toMatch(/cycle/);
    expect(error.location).toMatch(/^\/steps\//);
  });

  it('refuses a negative maxRepairs with a typed error before calling the model', async () => {
    const model = scriptedModel([]);
    const error = await caught(planFromGoal({ goal, tools: createTestTools().registry, model, maxRepairs: -1 }));
    expect(error.location).toBe('maxRepairs');
    expect(model.calls).toBe(0);
  });

  it('lets goal steps through only for the agentic engine', async () => {
    const goalSteps = { id: 'plan_goal', steps: [{ id: 'think', description: 'decide what to note' }] };
    const agentic = await planFromGoal({
      goal,
      tools: createTestTools().registry,
      model: scriptedModel([toolCall(SUBMIT_PLAN, goalSteps)]),
      engine: 'agentic',
    });
    expect(agentic.plan.steps[0]?.tool).toBeUndefined();
    const dag = await caught(
      planFromGoal({
        goal,
        tools: createTestTools().registry,
        model: scriptedModel([toolCall(SUBMIT_PLAN, goalSteps)]),
        maxRepairs: 0,
      }),
    );
    expect(dag.code).toBe(PlannerErrorCodes.REPAIRS_EXHAUSTED);
  });
});

describe('planFromGoal over real HTTP and through the AI SDK', () => {
  const servers: FakeOpenAIServer[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });

  it('repairs invalid arguments through openAICompatible in the OpenAI wire format', async () => {
    const badArgs = { ...validPlan, steps: [{ id: 'first', tool: 'note', args: { text: 5 } }] };
    const server = await startFakeOpenAIServer({
      replies: [toolCall(SUBMIT_PLAN, badArgs), toolCall(SUBMIT_PLAN, validPlan)],
    });
    servers.push(server);
    const model = openAICompatible({ baseURL: server.url, model: 'planner-model' });
    const result = await planFromGoal({ goal, tools: createTestTools().registry, model });

    expect(result.plan).toEqual(validPlan);
    const [first, second] = server.requests;
    const tools = first?.body?.tools as { function: { name: string; parameters: Record<string, unknown> } }[];
    expect(tools.map((tool) => tool.function.name)).toEqual([SUBMIT_PLAN]);
    expect(tools[0]?.function.parameters.$schema).toBeUndefined();
    const messages = second?.body?.messages as { role: string; tool_call_id?: string; content: string }[];
    const last = messages.at(-1);
    expect(last?.role).toBe('tool');
    expect(last?.tool_call_id).toBe('call_0_0');
    expect(last?.content).toContain('E202 invalid-args at /steps/0/args');
  });

  it('reads a JSON text answer from an AI SDK model', async () => {
    const model = new MockLanguageModelV3({
      provider: 'mock-provider',
      modelId: 'mock-model',
      doGenerate: async () => ({
        content: [{ type: 'text', text: JSON.stringify(validPlan) }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: {
          inputTokens: { total: 30, noCache: 30, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 12, text: 12, reasoning: undefined },
        },
        warnings: [],
      }),
    });
    const result = await planFromGoal({ goal, tools: createTestTools().registry, model: fromAISDK(model) });
    expect(result.plan.id).toBe('plan_notes');
    expect(result.usage).toEqual({ promptTokens: 30, completionTokens: 12, totalTokens: 42 });
  });
});

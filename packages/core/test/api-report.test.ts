// What @stepwise/core exports is recorded in packages/core/api/ (one report per entry, written by
// `npm run api:update`). This test builds the reports again from the sources and fails, naming the
// export, when a name appears, disappears, changes kind or signature without its report following.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiEntry,
  type ApiName,
  collectApi,
  compareNames,
  ENTRIES,
  parseReport,
  renderReport,
} from '../../../scripts/api-report.mjs';

/** The host entry stays small enough to read: what a host needs, nothing an engine or store author does. */
const HOST_NAMES_MAX = 120;

let current: Map<string, ApiName[]>;
beforeAll(() => {
  current = new Map(collectApi().map((entry) => [entry.entry, entry.names]));
}, 120_000);

const namesOf = (entry: ApiEntry): ApiName[] => current.get(entry.entry) ?? [];
const recordedOf = (entry: ApiEntry): ApiName[] =>
  parseReport(readFileSync(new URL(`../${entry.report}`, import.meta.url), 'utf8'));

describe('the API report of @stepwise/core', () => {
  it.each(ENTRIES)('$entry exports what its report in packages/core/api records', (entry) => {
    const differences = compareNames(entry, recordedOf(entry), namesOf(entry));
    expect(differences, `\n${differences.join('\n')}\n`).toEqual([]);
  });

  it.each(ENTRIES)('$entry: its report reads back as it was written', (entry) => {
    const names = namesOf(entry);
    expect(parseReport(renderReport({ ...entry, names }))).toEqual(names);
    expect(names.filter((name) => name.kind === 'unknown').map((name) => name.name)).toEqual([]);
  });

  it(`@stepwise/core exports at most ${HOST_NAMES_MAX} names`, () => {
    const [host] = ENTRIES;
    expect(host?.entry).toBe('@stepwise/core');
    expect(namesOf(host as ApiEntry).length).toBeGreaterThan(0);
    expect(namesOf(host as ApiEntry).length).toBeLessThanOrEqual(HOST_NAMES_MAX);
  });

  it('no name is exported by two entries: each has one audience', () => {
    const homes = new Map<string, string[]>();
    for (const entry of ENTRIES) {
      for (const { name } of namesOf(entry)) homes.set(name, [...(homes.get(name) ?? []), entry.entry]);
    }
    expect([...homes].filter(([, entries]) => entries.length > 1)).toEqual([]);
  });
});

describe('compareNames', () => {
  const [host] = ENTRIES as [ApiEntry];
  const recorded: ApiName[] = [
    { name: 'validatePlan', kind: 'function', signature: '(input: unknown): PlanValidation', internal: false },
    { name: 'Plan', kind: 'type', signature: ' = z.infer<typeof PlanSchema>', internal: false },
  ];

  it('names an export that appears, with the command that records it', () => {
    const added = { name: 'verifyJournal', kind: 'function', signature: '(): void', internal: false } as const;
    expect(compareNames(host, recorded, [...recorded, added])).toEqual([
      'new export verifyJournal (function) in @stepwise/core: add it to packages/core/api/core.api.md with `npm run api:update`',
    ]);
  });

  it('names an export that disappears, and one that changes kind', () => {
    const plan = { name: 'Plan', kind: 'interface', signature: ' { id; steps }', internal: false } as const;
    expect(compareNames(host, recorded, [plan])).toEqual([
      'Plan in @stepwise/core changed kind from type to interface: record it in packages/core/api/core.api.md with `npm run api:update`',
      'validatePlan (function) is no longer exported by @stepwise/core: remove it from packages/core/api/core.api.md with `npm run api:update`',
    ]);
  });

  it('names a changed signature, and a name newly marked internal', () => {
    const [validate, plan] = recorded as [ApiName, ApiName];
    const changed = [{ ...validate, signature: '(input: unknown, options?: object): PlanValidation' }, plan];
    expect(compareNames(host, recorded, changed)[0]).toMatch(
      /^validatePlan in @stepwise\/core changed:\n {2}was \(input/,
    );
    expect(compareNames(host, recorded, [validate, { ...plan, internal: true }])).toHaveLength(1);
    expect(compareNames(host, recorded, recorded)).toEqual([]);
  });
});

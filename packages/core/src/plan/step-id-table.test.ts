import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdLookups, StepIdTable } from './step-id-table.js';

/** Adds the ids the way validation does (first occurrence wins); every lookup that a Map answers differently. */
function differencesFromMap(ids: readonly string[], absent: readonly string[], maxProbes?: number): string[] {
  const table = new StepIdTable(ids.length, maxProbes);
  const expected = new Map<string, number>();
  const differences: string[] = [];
  const check = (what: string, actual: number, wanted: number) => {
    if (actual !== wanted) differences.push(`${what}: ${actual}, not ${wanted}`);
  };
  for (const id of ids) {
    check(`before adding ${JSON.stringify(id)}`, table.slotOf(id), expected.get(id) ?? -1);
    check(`intern ${JSON.stringify(id)}`, table.intern(id), expected.get(id) ?? expected.size);
    if (!expected.has(id)) expected.set(id, expected.size);
  }
  for (const [id, slot] of expected) {
    check(JSON.stringify(id), table.slotOf(id), slot);
    // As a string reference holds it: "$id/pointer", looked up by range.
    check(`range of ${JSON.stringify(id)}`, table.slotOf(`$${id}/value`, 1, id.length + 1), slot);
  }
  for (const id of absent) check(`absent ${JSON.stringify(id)}`, table.slotOf(id), expected.get(id) ?? -1);
  // The same lookups in one batch, whole ids and ranges, past the batch's first capacity.
  const lookups = new IdLookups(2);
  const wanted: number[] = [];
  for (const id of [...ids, ...absent]) {
    lookups.add(id, 0, id.length);
    lookups.add(`$${id}/value`, 1, id.length + 1);
    wanted.push(expected.get(id) ?? -1, expected.get(id) ?? -1);
  }
  table.slotsOf(lookups);
  for (let index = 0; index < wanted.length; index++) {
    check(`batched lookup ${index}`, lookups.slots[index] as number, wanted[index] as number);
  }
  return differences;
}

const idArbitrary = fc.oneof(
  fc.constantFrom('a', 'b', 's1', 's10', '__proto__', 'constructor', '0', '', 'ab'),
  fc.string({ maxLength: 6 }),
  fc.string({ unit: 'binary', maxLength: 4 }),
);

describe('StepIdTable', () => {
  it('finds what a Map finds, repeated and absent ids included', () => {
    fc.assert(
      fc.property(fc.array(idArbitrary, { maxLength: 60 }), fc.array(idArbitrary, { maxLength: 20 }), (ids, absent) => {
        expect(differencesFromMap(ids, absent)).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('hands every id to a Map when probing runs long, and still finds the same slots', () => {
    fc.assert(
      fc.property(
        fc.array(idArbitrary, { minLength: 10, maxLength: 60 }),
        fc.array(idArbitrary, { maxLength: 20 }),
        (ids, absent) => {
          // One probe each: the first collision gives up hashing.
          expect(differencesFromMap(ids, absent, 1)).toEqual([]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('answers the same once its arrays are handed over and written over', () => {
    const ids = ['a', 'b', 's10', '__proto__', 'ünïcödé', ''];
    const table = new StepIdTable(ids.length);
    for (const id of ids) table.intern(id);
    for (const array of table.release((slot) => ids[slot] as string)) array.fill(-7);
    expect(ids.map((id) => table.slotOf(id))).toEqual([0, 1, 2, 3, 4, 5]);
    expect(table.slotOf('$s10/value', 1, 4)).toBe(2);
    expect(table.slotOf('ghost')).toBe(-1);
    const lookups = new IdLookups();
    for (const id of [...ids, 'ghost']) lookups.add(id, 0, id.length);
    table.slotsOf(lookups);
    expect([...lookups.slots.subarray(0, lookups.length)]).toEqual([0, 1, 2, 3, 4, 5, -1]);
  });

  it('holds 100,000 ids', () => {
    const ids = Array.from({ length: 100_000 }, (_, index) => `step-${index}`);
    expect(differencesFromMap(ids, ['step-100000', 'step-', 'step-01'])).toEqual([]);
  });
});

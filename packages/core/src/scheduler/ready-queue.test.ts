import { describe, expect, it } from 'vitest';
import { type ReadyEntry, ReadyQueue } from './ready-queue.js';

const entry = (index: number, tool?: string, toolLimit = 1): ReadyEntry => ({ index, tool, toolLimit });

function drain(queue: ReadyQueue<ReadyEntry>): number[] {
  const taken: number[] = [];
  for (let next = queue.take(); next; next = queue.take()) taken.push(next.index);
  return taken;
}

describe('ReadyQueue', () => {
  it('hands out entries lowest plan index first, whatever order they were pushed in', () => {
    const queue = new ReadyQueue(Number.POSITIVE_INFINITY);
    const order = [5, 3, 9, 0, 7, 1, 8, 2, 6, 4, 3];
    for (const index of order) queue.push(entry(index));
    expect(drain(queue)).toEqual([...order].sort((a, b) => a - b));
  });

  it('sorts a large shuffled heap exactly (the heap invariant holds at every size)', () => {
    const queue = new ReadyQueue(Number.POSITIVE_INFINITY);
    const indexes = Array.from({ length: 5000 }, (_, index) => (index * 7919) % 5000);
    for (const index of indexes) queue.push(entry(index));
    expect(drain(queue)).toEqual(Array.from({ length: 5000 }, (_, index) => index));
  });

  it('stops at the global limit and goes on as slots are released', () => {
    const queue = new ReadyQueue(2);
    for (const index of [0, 1, 2, 3]) queue.push(entry(index));
    const first = queue.take();
    const second = queue.take();
    expect([first?.index, second?.index]).toEqual([0, 1]);
    expect(queue.take()).toBeUndefined();
    expect(queue.active).toBe(2);
    queue.release(first as ReadyEntry);
    expect(queue.take()?.index).toBe(2);
    expect(queue.take()).toBeUndefined();
  });

  it('parks a step whose tool is full without spending a global slot, and returns it in order when the tool frees', () => {
    const queue = new ReadyQueue(3);
    queue.push(entry(0, 'shell'));
    queue.push(entry(1, 'shell'));
    queue.push(entry(2, 'shell'));
    queue.push(entry(3));
    queue.push(entry(4));
    // shell allows one: 1 and 2 are parked, the free global slots go to 3 and 4.
    const taken = drain(queue);
    expect(taken).toEqual([0, 3, 4]);
    expect(queue.active).toBe(3);
    queue.release(entry(3));
    expect(queue.take()).toBeUndefined(); // shell is still busy with 0
    queue.release(entry(0, 'shell'));
    expect(queue.take()?.index).toBe(1);
    queue.release(entry(1, 'shell'));
    expect(queue.take()?.index).toBe(2);
  });

  it('counts each tool against its own limit', () => {
    const queue = new ReadyQueue(10);
    for (let index = 0; index < 6; index++) queue.push(entry(index, index % 2 === 0 ? 'a' : 'b', 2));
    expect(drain(queue)).toEqual([0, 1, 2, 3]);
  });
});

import { describe, expect, it } from 'vitest';
import { chainPlan } from '../testing/fixtures.js';
import { canonicalJson, REMEMBERED_TEXT_MIN, rememberCanonicalText } from './canonical-json.js';
import { digestPlan, planDigest } from './plan-digest.js';

/** Canonical JSON computed from a copy: no remembered text can be the copy's. */
const fresh = (value: unknown) => canonicalJson(JSON.parse(JSON.stringify(value)));

describe("a large plan's remembered canonical text", () => {
  it('is used once for the same unchanged object, then written again', () => {
    const plan = chainPlan(3);
    rememberCanonicalText(plan, '"remembered"', JSON.stringify(plan));
    expect(canonicalJson({ type: 'run-start', plan })).toBe('{"plan":"remembered","type":"run-start"}');
    // Once: the next time the plan is written out.
    expect(canonicalJson({ plan })).toBe(fresh({ plan }));
    // Not for another object with the same content.
    const twin = chainPlan(3);
    rememberCanonicalText(plan, '"remembered"', JSON.stringify(plan));
    expect(canonicalJson({ plan: twin })).toBe(fresh({ plan: twin }));
  });

  it('is not used for a plan changed since its digest: the text is that of the plan as it is', () => {
    const plan = chainPlan(2_000);
    const digest = digestPlan(plan);
    expect(canonicalJson(plan).length).toBeGreaterThanOrEqual(REMEMBERED_TEXT_MIN);
    expect(planDigest(plan)).toBe(digest);
    (plan.steps[7] as { args: unknown }).args = { edited: true };
    const event = { type: 'run-start', planDigest: digest, plan };
    expect(canonicalJson(event)).toBe(fresh(event));
    expect(canonicalJson(event)).toContain('"args":{"edited":true}');
  });

  it('gives the text the plan would give without it, for a digest taken with the JSON passed in', () => {
    const plan = chainPlan(2_000);
    digestPlan(plan, JSON.stringify(plan));
    const event = { type: 'run-start', plan, at: '2026-11-27T00:00:00.000Z' };
    expect(canonicalJson(event)).toBe(fresh(event));
  });
});

// The scripted model of the example, as a function of the conversation (OpenAI wire format). It
// plans one step, then fixes applyDiscount: the first attempt makes a plausible but wrong edit (the
// tests still fail, so solve rolls it back and reports the failing tests); the second attempt reads
// that report and the restored file, and makes the right edit.

export const PLAN = {
  id: 'fix-discount',
  goal: 'Make the tests of this project pass without changing them.',
  steps: [
    {
      id: 'fix-discount',
      description:
        'applyDiscount in src/cart.js should take a percentage off the total. Fix it with file_edit; do not edit the tests.',
    },
  ],
};

const BUGGY = 'return total - percent;';
const WRONG = 'return total - total / percent;';
const RIGHT = 'return total * (1 - percent / 100);';

const call = (name, args) => ({ toolCalls: [{ name, arguments: args }] });

export function scriptedFixer(request) {
  const body = request.body ?? {};
  const messages = body.messages ?? [];
  if ((body.tools ?? []).some((tool) => tool.function?.name === 'submit_plan')) return call('submit_plan', PLAN);
  const opening = messages.find((message) => message.role === 'user')?.content ?? '';
  const retry = opening.includes('failed and was rolled back');
  const turn = messages.filter((message) => message.role === 'assistant').length;
  const lastTool = messages.filter((message) => message.role === 'tool').at(-1)?.content ?? '';
  if (turn === 0) return call('file_read', { path: 'src/cart.js' });
  if (turn === 1) {
    // The file must be back to its original state: a rollback that did not happen blocks the step.
    if (!lastTool.includes(BUGGY)) return call('report_blocked', { reason: `expected "${BUGGY}" in src/cart.js` });
    if (!retry) return call('file_edit', { path: 'src/cart.js', edits: [{ search: BUGGY, replace: WRONG }] });
    if (!/half price/.test(opening)) return call('report_blocked', { reason: 'the failing tests were not reported' });
    return call('file_edit', { path: 'src/cart.js', edits: [{ search: BUGGY, replace: RIGHT }] });
  }
  return call('complete_step', {
    summary: retry
      ? 'applyDiscount now multiplies by (1 - percent / 100).'
      : 'applyDiscount divides by the percentage.',
  });
}

import type { GoalProgressEvent } from '@stepwise/core/store';

/**
 * A goal step's progress after one turn, in one line: the turn and the model's decision, the
 * criteria met, the goals achieved, then the first line of what the model wrote.
 */
export function goalProgressLine(progress: GoalProgressEvent): string {
  const parts = [`turn ${progress.turn}`, progress.decision];
  const { criteria, goals } = progress;
  if (criteria.length > 0) {
    const met = criteria.filter((criterion) => criterion.status === 'met').length;
    const checked = criteria.some((criterion) => criterion.status !== 'unchecked');
    parts.push(checked ? `${met}/${criteria.length} criteria met` : `${criteria.length} criteria not checked yet`);
  }
  if (goals && goals.length > 0) {
    const achieved = goals.filter((goal) => goal.status === 'achieved').length;
    parts.push(`${achieved}/${goals.length} goals achieved`);
  }
  if (progress.toolFailures > 0) parts.push(`${progress.toolFailures} failed calls`);
  const note = progress.note?.split('\n')[0]?.trim();
  if (note) parts.push(note);
  return parts.join(' · ');
}

/**
 * The event types the journal stores as a small integer (`events.type_code`, schema version 8):
 * code = index + 1. A frozen list, not core's: a code must name the same type in every file ever
 * written, so types are only ever added at the end. Any other type is stored as its text.
 */
const CODED_TYPES: readonly string[] = [
  'run-start',
  'run-resume',
  'run-continue',
  'step-start',
  'approval-request',
  'approval-decision',
  'approval-response',
  'tool-call',
  'tool-result',
  'step-retry',
  'recovery-decision',
  'adjust-decision',
  'progress-report',
  'process-start',
  'process-kill',
  'model-call',
  'goal-progress',
  'question-ask',
  'limit-reach',
  'step-end',
  'plan-revise',
  'run-end',
  // The code agent's (@stepwise/code-agent).
  'attempt-start',
  'attempt-end',
  'validation-end',
  'workspace-checkpoint',
  'workspace-rollback',
  'plan-ready',
  'plan-revised',
];

// Bigints: better-sqlite3 binds a number as an 8-byte REAL, and `type_code` has no affinity to convert it.
const codes = new Map(CODED_TYPES.map((type, index) => [type, BigInt(index + 1)]));

/** What `events.type_code` holds for `type`: its code (a 1-byte integer), or the text itself for a type without one. */
export const typeCodeOf = (type: string): bigint | string => codes.get(type) ?? type;

/** The type a `type_code` value stands for. */
export const typeOfCode = (code: number | string): string =>
  typeof code === 'string' ? code : (CODED_TYPES[code - 1] ?? String(code));

const quoted = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/** SQL: the type text of `column` (a `type_code`): the generated `events.type` column. */
export const typeOfCodeSql = (column: string): string =>
  `case when typeof(${column}) = 'text' then ${column} else case ${column} ${CODED_TYPES.map(
    (type, index) => `when ${index + 1} then ${quoted(type)}`,
  ).join(' ')} else cast(${column} as text) end end`;

/** SQL: the `type_code` of type text `column` (the migration of older files). */
export const typeCodeOfSql = (column: string): string =>
  `case ${column} ${CODED_TYPES.map((type, index) => `when ${quoted(type)} then ${index + 1}`).join(' ')} else ${column} end`;

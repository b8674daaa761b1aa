// Writes dist/plan.schema.json from the zod schema so editors and LLMs get the same contract.
import { writeFileSync } from 'node:fs';
import { planJsonSchema } from '../dist/index.js';

const schema = {
  $id: 'https://stepwise.dev/plan.schema.json',
  title: 'Stepwise plan',
  ...planJsonSchema(),
};
writeFileSync(new URL('../dist/plan.schema.json', import.meta.url), `${JSON.stringify(schema, null, 2)}\n`);

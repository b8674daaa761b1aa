export { generateReport } from './report/generate-report.js';

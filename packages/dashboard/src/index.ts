export { type HonoContextLike, honoHandler } from './adapters/hono-handler.js';
export { mountDashboard, type NodeHandler, type NodeRequest, nodeHandler } from './adapters/node-handler.js';
export { createDashboard, type Dashboard } from './create-dashboard.js';
export type { DashboardAction, DashboardActionKind, DashboardOptions } from './dashboard-options.js';
export { SESSION_COOKIE, TOKEN_HEADER } from './http/request-guard.js';
export type { RunActions, RunView } from './runs/run-view.js';
export type { RunRow, RunsPage, RunsQuery } from './runs/runs-list.js';
export { type DashboardServer, type ServeDashboardOptions, serveDashboard } from './serve-dashboard.js';

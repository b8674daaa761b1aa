import type { Dashboard } from '../create-dashboard.js';

/** What the adapter reads of a Hono context: the Fetch API request it wraps. */
export interface HonoContextLike {
  readonly req: { readonly raw: Request };
}

/**
 * The dashboard as a Hono handler: `app.all('/stepwise/*', honoHandler(dashboard))` with
 * `basePath: '/stepwise'`. Hono hands it the original request (full path), which the dashboard
 * answers as it is. (`app.mount` strips the mount path: use `all` instead.)
 */
export function honoHandler(dashboard: Dashboard): (context: HonoContextLike) => Promise<Response> {
  return (context) => dashboard.fetch(context.req.raw);
}

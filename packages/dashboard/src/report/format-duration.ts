/**
 * `850ms`, `1.2s`, `12.5s`, `2m 05s`: the one duration format of the terminal and the report.
 * Written as plain ES2017 without outside references: the report's script embeds its source.
 */
export function formatDuration(milliseconds: number | undefined | null): string {
  if (milliseconds === undefined || milliseconds === null || Number.isNaN(milliseconds)) return '';
  if (milliseconds < 1000) return `${Math.max(0, Math.round(milliseconds))}ms`;
  if (milliseconds < 60000) return `${(milliseconds / 1000).toFixed(1)}s`;
  const seconds = Math.round(milliseconds / 1000);
  return `${Math.floor(seconds / 60)}m ${String(seconds % 60).padStart(2, '0')}s`;
}

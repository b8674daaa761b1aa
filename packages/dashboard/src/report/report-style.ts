/** The report's stylesheet (inlined: the file must work offline, from disk, forever). */
export const REPORT_STYLE = `
:root {
  --bg: #f6f7f9; --panel: #fff; --ink: #1d2430; --muted: #5d6776; --line: #dde2e8;
  --succeeded: #2e9d5b; --failed: #d64545; --denied: #e08a1e; --skipped: #9aa3ad;
  --cancelled: #6b7280; --pending: #c9d0d8; --running: #3b82f6; --retrying: #a855f7;
  --interrupted: #d4a106; --critical: #111827; --accent: #2563eb; --waiting: #0e7490;
}
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
header { padding: 20px 28px 12px; background: var(--panel); border-bottom: 1px solid var(--line); }
header h1 { margin: 0 0 4px; font-size: 20px; }
header .goal { color: var(--muted); margin: 0 0 12px; }
.meta { display: flex; flex-wrap: wrap; gap: 6px 22px; margin: 0; }
.meta div { display: flex; flex-direction: column; }
.meta dt { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.meta dd { margin: 0; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; }
.layout { display: grid; grid-template-columns: minmax(0, 1fr) 440px; gap: 18px; padding: 18px 28px 40px; align-items: start; }
@media (max-width: 1100px) { .layout { grid-template-columns: 1fr; } }
section, aside { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin-bottom: 18px; }
section h2, aside h2 { font-size: 15px; margin: 0 0 10px; }
.scroll { overflow: auto; max-height: 70vh; }
#graph-scroll svg { display: block; max-width: none; }
.zoom { display: flex; gap: 4px; margin-bottom: 6px; }
.zoom button { font: inherit; font-size: 12px; padding: 1px 9px; border: 1px solid var(--line); border-radius: 5px; background: var(--panel); cursor: pointer; }
header .failure { margin: 0 0 8px; color: var(--failed); font-weight: 600; }
header .failure .step-link { cursor: pointer; text-decoration: underline; }
.legend { display: flex; flex-wrap: wrap; gap: 12px; font-size: 12px; color: var(--muted); margin-bottom: 8px; }
.legend span::before { content: ""; display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 5px; vertical-align: -1px; background: var(--status, var(--pending)); }
.legend .legend-critical { --status: var(--critical); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; background: var(--muted); text-transform: lowercase; }
.badge.status-completed, .badge.status-succeeded { background: var(--succeeded); }
.badge.status-failed { background: var(--failed); }
.badge.status-partial, .badge.status-denied { background: var(--denied); }
.badge.status-skipped { background: var(--skipped); }
.badge.status-cancelled { background: var(--cancelled); }
.badge.status-running { background: var(--running); }
.badge.status-waiting { background: var(--waiting); }
.badge.status-pending { background: var(--pending); color: var(--ink); }
.badge.status-interrupted, .badge.status-retrying { background: var(--interrupted); }
svg text { font-family: system-ui, sans-serif; }
.node { cursor: pointer; }
.node rect { fill: #fff; stroke: var(--line); stroke-width: 1.5; }
.node .status-strip { stroke: none; }
.node text.label { font-size: 12.5px; font-weight: 600; fill: var(--ink); }
.node text.sub { font-size: 11px; fill: var(--muted); }
.node.critical rect.box { stroke: var(--critical); stroke-width: 2.5; }
.node.selected rect.box { stroke: var(--accent); stroke-width: 3; }
.node:focus { outline: none; }
.node:focus rect.box { stroke: var(--accent); }
.edge { fill: none; stroke: #a3adb9; stroke-width: 1.5; }
.edge.critical { stroke: var(--critical); stroke-width: 2.5; }
.status-succeeded { --status: var(--succeeded); } .status-failed { --status: var(--failed); }
.status-denied { --status: var(--denied); } .status-skipped { --status: var(--skipped); }
.status-cancelled { --status: var(--cancelled); } .status-pending { --status: var(--pending); }
.status-running { --status: var(--running); } .status-retrying { --status: var(--retrying); }
.status-interrupted { --status: var(--interrupted); } .status-waiting { --status: var(--waiting); }
.node .status-strip, .bar, .call { fill: var(--status, var(--pending)); }
.call { cursor: pointer; }
.node.status-pending rect.box { stroke-dasharray: 4 3; }
.bar { cursor: pointer; }
.bar.critical { stroke: var(--critical); stroke-width: 2; }
.bar.selected { stroke: var(--accent); stroke-width: 3; }
.row-label { font-size: 12px; fill: var(--ink); cursor: pointer; }
.row-label.critical { font-weight: 700; }
.row-band { fill: transparent; }
.row-band.odd { fill: #f3f5f8; }
.row-band.selected { fill: #e6efff; }
svg#timeline { max-width: 100%; height: auto; }
.axis line { stroke: var(--line); } .axis text { font-size: 11px; fill: var(--muted); }
.resume line { stroke: var(--interrupted); stroke-dasharray: 5 4; stroke-width: 1.5; } .resume text { font-size: 11px; fill: var(--interrupted); }
.wait { fill: url(#waiting-hatch); stroke: var(--waiting); stroke-width: 1; cursor: pointer; }
.wait.open { stroke-dasharray: 3 2; }
.legend span.waiting-swatch::before { background: repeating-linear-gradient(45deg, var(--waiting) 0 2px, transparent 2px 4px); border: 1px solid var(--waiting); }
.attempt-label { font-size: 10px; fill: #fff; pointer-events: none; }
table { width: 100%; border-collapse: collapse; font-size: 13px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
tbody tr { cursor: pointer; } tbody tr:hover { background: #f3f6fb; } tbody tr.selected { background: #e6efff; }
td.mono, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
aside { position: sticky; top: 12px; max-height: calc(100vh - 24px); overflow: auto; }
aside .empty { color: var(--muted); }
aside h3 { font-size: 13px; margin: 16px 0 6px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
aside dl { display: grid; grid-template-columns: max-content 1fr; gap: 3px 12px; margin: 0; }
aside dt { color: var(--muted); } aside dd { margin: 0; word-break: break-word; }
pre { background: #f3f5f8; border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; margin: 4px 0 10px; max-height: 320px; overflow: auto; font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; white-space: pre-wrap; word-break: break-word; }
.error { color: var(--failed); font-weight: 600; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; margin-bottom: 8px; }
.card .title { font-weight: 600; margin-bottom: 4px; }
a.step-link { color: var(--accent); cursor: pointer; text-decoration: underline; margin-right: 6px; }
details > summary { cursor: pointer; color: var(--muted); }
footer { padding: 0 28px 24px; color: var(--muted); font-size: 12px; }
`;

/**
 * The dashboard's own stylesheet, beside the report's (REPORT_STYLE) which the run page loads too:
 * the top bar, the runs list, the actions and the live journal.
 */
export const DASHBOARD_STYLE = `
.topbar { display: flex; align-items: center; gap: 14px; padding: 10px 28px; background: #111827; color: #e5e7eb; font-size: 14px; }
.topbar a { color: #fff; text-decoration: none; font-weight: 600; }
.topbar .spacer { flex: 1; }
.live-state { font-size: 12px; padding: 1px 8px; border-radius: 10px; background: #374151; }
.live-state.live { background: #065f46; }
.live-state.live::before { content: "● "; color: #34d399; }
.live-state.offline { background: #7f1d1d; }
.read-only { font-size: 12px; padding: 1px 8px; border-radius: 10px; background: #92400e; }
.runs-main { padding: 18px 28px 40px; }
.filters { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin-bottom: 12px; }
.filters input[type=search] { font: inherit; padding: 5px 9px; min-width: 320px; border: 1px solid var(--line); border-radius: 6px; }
.filters select { font: inherit; padding: 4px 6px; border: 1px solid var(--line); border-radius: 6px; background: var(--panel); }
.filters .hint { color: var(--muted); font-size: 12px; }
#runs { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; }
#runs td.goal { max-width: 420px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#runs td.waiting { color: var(--waiting); }
#runs a { color: var(--accent); text-decoration: none; }
#runs tr.fresh { animation: fresh 1.5s ease-out; }
@keyframes fresh { from { background: #dbeafe; } to { background: transparent; } }
.pager { display: flex; gap: 10px; align-items: center; margin-top: 10px; }
.pager button, .actions button { font: inherit; font-size: 13px; padding: 3px 12px; border: 1px solid var(--line); border-radius: 6px; background: var(--panel); cursor: pointer; }
.pager button:disabled, .actions button:disabled { opacity: .45; cursor: default; }
.empty-list { color: var(--muted); padding: 12px; }
#actions-section { border-color: var(--waiting); }
.actions .card { display: flex; flex-direction: column; gap: 6px; }
.actions .buttons { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; }
.actions button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
.actions button.danger { border-color: var(--failed); color: var(--failed); }
.actions textarea { font: inherit; min-height: 56px; padding: 6px 8px; border: 1px solid var(--line); border-radius: 6px; }
.actions table td { vertical-align: middle; }
.actions .note { color: var(--muted); font-size: 12px; margin: 4px 0; }
.notice { margin: 0 0 8px; font-weight: 600; }
.notice.ok { color: var(--succeeded); }
.notice.error { color: var(--failed); }
#events { list-style: none; margin: 0; padding: 0; max-height: 260px; overflow: auto; font: 12px/1.5 ui-monospace, SFMono-Regular, Menlo, monospace; }
#events li { border-bottom: 1px solid #eef1f4; padding: 1px 0; }
#events .seq { color: var(--muted); display: inline-block; min-width: 44px; }
pre.live-output { background: #0f172a; color: #e2e8f0; border-color: #1e293b; max-height: 420px; }
`;

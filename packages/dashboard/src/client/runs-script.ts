import { ELEMENT_FUNCTION } from '../report/element-function.js';
import { formatDuration } from '../report/format-duration.js';

/**
 * The runs list's behaviour: filters and search in the address (so a view can be shared), paging,
 * and the list kept live by a Server-Sent Events stream of the page (`api/runs/stream`). Plain
 * ES2017 without template literals; every value is inserted with textContent.
 */
export const RUNS_SCRIPT = `
(function () {
  'use strict';
  var base = document.querySelector('meta[name="stepwise-base"]').getAttribute('content');
  var state = JSON.parse(document.getElementById('stepwise-runs').textContent);
  var body = document.querySelector('#runs tbody');
  var form = document.getElementById('filters');
  var liveState = document.getElementById('live-state');
  var known = {};
  state.runs.forEach(function (run) { known[run.runId] = run.status; });
  var ms = ${formatDuration.toString()};
  var stream = null;

  ${ELEMENT_FUNCTION}
  function when(iso) {
    var date = new Date(iso);
    return isNaN(date.getTime()) ? iso : date.toLocaleString();
  }
  function queryString(page) {
    var params = new URLSearchParams();
    if (state.query.status.length) params.set('status', state.query.status.join(','));
    if (state.query.search) params.set('q', state.query.search);
    if (page) params.set('page', String(page));
    var text = params.toString();
    return text ? '?' + text : '';
  }
  function row(run) {
    var tr = el('tr');
    tr.setAttribute('data-run-id', run.runId);
    tr.setAttribute('data-status', run.status);
    if (known[run.runId] !== run.status) tr.className = 'fresh';
    var link = el('a', 'mono', run.runId);
    link.href = base + '/runs/' + encodeURIComponent(run.runId);
    var id = el('td'); id.appendChild(link); tr.appendChild(id);
    var status = el('td'); status.appendChild(el('span', 'badge status-' + run.status, run.status)); tr.appendChild(status);
    tr.appendChild(el('td', null, run.engine));
    var goal = el('td', 'goal', run.goal || run.planId);
    goal.title = (run.goal || '') + ' (plan ' + run.planId + ')';
    tr.appendChild(goal);
    tr.appendChild(el('td', null, when(run.createdAt)));
    tr.appendChild(el('td', 'duration', ms(run.durationMs)));
    var counts = Object.keys(run.stepCounts).map(function (key) { return run.stepCounts[key] + ' ' + key; });
    tr.appendChild(el('td', null, counts.join(', ') || String(run.stepCount)));
    tr.appendChild(el('td', 'waiting', run.waitingOn.join('; ')));
    return tr;
  }
  function render(page) {
    state = page;
    body.textContent = '';
    page.runs.forEach(function (run) { body.appendChild(row(run)); });
    var next = {};
    page.runs.forEach(function (run) { next[run.runId] = run.status; });
    known = next;
    document.getElementById('runs-empty').hidden = page.runs.length > 0;
    document.getElementById('previous').disabled = page.query.page === 0;
    document.getElementById('next').disabled = !page.hasMore;
    document.getElementById('page-label').textContent = 'page ' + (page.query.page + 1);
  }
  function follow() {
    if (stream) stream.close();
    stream = new EventSource(base + '/api/runs/stream' + queryString(state.query.page));
    stream.addEventListener('runs', function (message) { render(JSON.parse(message.data)); });
    stream.addEventListener('open', function () { liveState.textContent = 'live'; liveState.className = 'live-state live'; });
    stream.addEventListener('error', function () { liveState.textContent = 'reconnecting'; liveState.className = 'live-state offline'; });
  }
  function go(page) {
    state.query.page = page;
    history.replaceState(null, '', base + '/' + queryString(page));
    follow();
  }
  form.addEventListener('submit', function (event) { event.preventDefault(); });
  var typing = null;
  form.addEventListener('input', function () {
    clearTimeout(typing);
    // One new stream once the person stops typing, not one per key.
    typing = setTimeout(function () {
      var status = form.elements.status.value;
      state.query.status = status ? status.split(',') : [];
      state.query.search = form.elements.q.value.trim();
      go(0);
    }, 250);
  });
  document.getElementById('previous').addEventListener('click', function () { go(Math.max(0, state.query.page - 1)); });
  document.getElementById('next').addEventListener('click', function () { go(state.query.page + 1); });
  render(state);
  follow();
})();
`;

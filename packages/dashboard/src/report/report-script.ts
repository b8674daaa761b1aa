import { ELEMENT_FUNCTION } from './element-function.js';
import { formatDuration } from './format-duration.js';

/**
 * The report's behaviour: select a step (click or keyboard on a node, a bar or a row) and show
 * its details. Plain ES2017 with no template literals, so it can live in this string; every
 * value from the run is inserted with textContent, never as HTML.
 *
 * The live dashboard runs the same script and drives it through `window.stepwiseReport`:
 * `update(data)` after it replaced the graph, timeline and table with newer ones (the selection,
 * zoom and an unchanged details panel stay), `afterRender(hook)` to add to the details panel.
 */
export const REPORT_SCRIPT = String.raw`
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('stepwise-data').textContent);
  var stepsById = {};
  function index() {
    stepsById = {};
    data.steps.forEach(function (step) { stepsById[step.id] = step; });
  }
  index();
  var panel = document.getElementById('details');
  var selectedId = null;
  var renderHooks = [];

  ${ELEMENT_FUNCTION}
  function json(value) {
    if (value === undefined) return '';
    if (typeof value === 'string') return value;
    try { return JSON.stringify(value, null, 2); } catch (error) { return String(value); }
  }
  var ms = ${formatDuration.toString()};
  function badge(status) { return el('span', 'badge status-' + status, status); }
  function pre(value) { return el('pre', null, json(value)); }
  function heading(text) { return el('h3', null, text); }
  function definitions(pairs) {
    var list = el('dl');
    pairs.forEach(function (pair) {
      if (pair[1] === undefined || pair[1] === null || pair[1] === '') return;
      list.appendChild(el('dt', null, pair[0]));
      var value = el('dd');
      if (pair[1] instanceof Node) value.appendChild(pair[1]); else value.textContent = String(pair[1]);
      list.appendChild(value);
    });
    return list;
  }
  function errorText(error) { return error ? error.code + ': ' + error.message : ''; }
  // stdout and stderr come both as artifacts and as output fields (run_command): keep the artifacts.
  function withoutStreams(output, artifacts) {
    if (!output || typeof output !== 'object' || Array.isArray(output)) return output;
    var copy = {};
    var kept = 0;
    Object.keys(output).forEach(function (key) {
      var duplicate = artifacts.some(function (artifact) { return artifact.kind === key && artifact.content === output[key]; });
      if (!duplicate) { copy[key] = output[key]; kept += 1; }
    });
    return kept ? copy : undefined;
  }

  function render(step) {
    panel.textContent = '';
    var title = el('h2');
    title.appendChild(el('span', 'mono', step.id + ' '));
    title.appendChild(badge(step.status));
    panel.appendChild(title);
    panel.setAttribute('data-step-id', step.id);
    var dependencies = el('span');
    step.dependsOn.forEach(function (id) {
      var link = el('a', 'step-link', id);
      link.setAttribute('data-goto', id);
      dependencies.appendChild(link);
    });
    panel.appendChild(definitions([
      ['tool', step.tool || '(agentic goal)'],
      ['description', step.description],
      ['depends on', step.dependsOn.length ? dependencies : 'nothing'],
      ['critical', step.critical ? 'yes: a failure fails the run' : 'no'],
      ['critical path', step.onCriticalPath ? 'on the critical path' : undefined],
      ['attempts', step.result ? step.result.attempt : undefined],
      ['working time', step.toolMs !== undefined && step.toolMs !== null ? ms(step.toolMs) : undefined],
      ['waiting for a person', step.waitingMs > 0 ? ms(step.waitingMs) : undefined],
      ['error', step.result && step.result.error ? errorText(step.result.error) : undefined],
    ]));
    panel.appendChild(heading('Arguments (as planned)'));
    panel.appendChild(pre(step.args));

    var bars = data.bars.filter(function (bar) { return bar.stepId === step.id; });
    if (bars.length) {
      panel.appendChild(heading('Attempts'));
      bars.forEach(function (bar) {
        var card = el('div', 'card');
        var head = el('div', 'title', 'attempt ' + bar.attempt + ' ');
        head.appendChild(badge(bar.status));
        card.appendChild(head);
        card.appendChild(definitions([
          ['execution', bar.executionId],
          ['started', '+' + ms(bar.start)],
          ['took', ms(bar.end - bar.start)],
          ['of it waiting', bar.waitingMs > 0 ? ms(bar.waitingMs) : undefined],
          ['error', errorText(bar.error)],
        ]));
        panel.appendChild(card);
      });
    }
    if (step.retries.length) {
      panel.appendChild(heading('Retries and recovery'));
      step.retries.forEach(function (retry) {
        panel.appendChild(pre(retry));
      });
    }
    if (step.approvals.length) {
      panel.appendChild(heading('Approvals'));
      step.approvals.forEach(function (approval) {
        var card = el('div', 'card');
        if (approval.question !== undefined) {
          card.appendChild(el('div', 'title', 'question (' + approval.cause + '): ' + (approval.answer !== undefined ? 'answered' : 'asked')));
          card.appendChild(definitions([
            ['asked', approval.question], ['answer', approval.answer], ['by', approval.answeredBy],
          ]));
        } else {
          card.appendChild(el('div', 'title', (approval.tool || '') + ': ' + (approval.decision || 'asked')));
          card.appendChild(definitions([
            ['effect', approval.effect], ['reason', approval.reason], ['source', approval.source], ['by', approval.by],
            ['answered', approval.response ? approval.response + ' by ' + approval.answeredBy : undefined],
          ]));
        }
        if (approval.args) card.appendChild(pre(approval.args));
        panel.appendChild(card);
      });
    }
    if (step.calls.length) {
      panel.appendChild(heading('Tool calls'));
      step.calls.forEach(function (call) {
        var card = el('div', 'card');
        var head = el('div', 'title', call.tool + (call.turn !== undefined ? ' (turn ' + call.turn + ')' : '') + ' ');
        head.appendChild(badge(call.status));
        card.appendChild(head);
        card.appendChild(definitions([
          ['execution', call.executionId], ['effect', call.effect], ['took', ms(call.durationMs)],
          ['exit code', call.output && typeof call.output.exitCode === 'number' ? call.output.exitCode : undefined],
        ]));
        card.appendChild(el('div', null, 'args'));
        card.appendChild(pre(call.args));
        if (call.error) card.appendChild(el('div', 'error', errorText(call.error)));
        var output = withoutStreams(call.output, call.artifacts);
        if (output !== undefined) { card.appendChild(el('div', null, 'output')); card.appendChild(pre(output)); }
        call.artifacts.forEach(function (artifact) {
          card.appendChild(el('div', null, artifact.kind + (artifact.name ? ' (' + artifact.name + ')' : '')));
          card.appendChild(pre(artifact.content));
        });
        panel.appendChild(card);
      });
    }
    if (step.goalProgress.length) {
      panel.appendChild(heading('Goal progress'));
      panel.appendChild(pre(step.goalProgress.join('\n')));
    }
    if (step.modelCalls.length) {
      panel.appendChild(heading('Model turns'));
      step.modelCalls.forEach(function (call) {
        var card = el('div', 'card');
        card.appendChild(el('div', 'title', 'turn ' + call.turn + ' · ' + call.model + ' · ' + ms(call.latencyMs) +
          (call.usage ? ' · ' + call.usage.totalTokens + ' tokens' : '')));
        if (call.error) card.appendChild(el('div', 'error', errorText(call.error)));
        var request = el('details'); request.appendChild(el('summary', null, 'request')); request.appendChild(pre(call.request));
        var response = el('details'); response.appendChild(el('summary', null, 'response')); response.appendChild(pre(call.response));
        card.appendChild(request); card.appendChild(response);
        panel.appendChild(card);
      });
    }
    if (step.progress.length) {
      panel.appendChild(heading('Progress'));
      panel.appendChild(pre(step.progress.map(function (item) { return item.percent + '% ' + (item.message || ''); }).join('\n')));
    }
    // The last attempt's tool call above already shows its output and streams: show them once.
    var shownInCall = step.calls.some(function (call) { return step.result && call.executionId === step.result.executionId; });
    if (step.result && !shownInCall) {
      panel.appendChild(heading('Result'));
      if (step.result.output !== undefined) panel.appendChild(pre(step.result.output));
      (step.result.artifacts || []).forEach(function (artifact) {
        panel.appendChild(el('div', null, artifact.kind));
        panel.appendChild(pre(artifact.content));
      });
      if (step.result.output === undefined && !(step.result.artifacts || []).length) panel.appendChild(el('p', 'empty', 'no output'));
    }
    renderHooks.forEach(function (hook) { hook(step, panel); });
  }

  function markSelected(id) {
    Array.prototype.forEach.call(document.querySelectorAll('.selected'), function (node) { node.classList.remove('selected'); });
    Array.prototype.forEach.call(document.querySelectorAll('[data-step-id]'), function (node) {
      if (node.getAttribute('data-step-id') === id && node !== panel) node.classList.add('selected');
    });
  }

  function select(id) {
    var step = stepsById[id];
    if (!step) return;
    selectedId = id;
    markSelected(id);
    render(step);
    if (history.replaceState) history.replaceState(null, '', '#step=' + encodeURIComponent(id));
  }

  document.addEventListener('click', function (event) {
    var target = event.target.closest ? event.target.closest('[data-goto], [data-step-id]') : null;
    if (!target || target === panel) return;
    select(target.getAttribute('data-goto') || target.getAttribute('data-step-id'));
  });
  document.addEventListener('keydown', function (event) {
    if (event.key !== 'Enter' && event.key !== ' ') return;
    var target = event.target.closest ? event.target.closest('[data-step-id]') : null;
    if (target && target !== panel) { event.preventDefault(); select(target.getAttribute('data-step-id')); }
  });
  var zoom = 1;
  // The graph's natural size is its viewBox: a live page replaces the graph, zoomed or not.
  function naturalSize(graph) {
    var box = graph ? (graph.getAttribute('viewBox') || '').split(' ') : [];
    return box.length === 4 ? { width: Number(box[2]), height: Number(box[3]) } : null;
  }
  function applyZoom(factor) {
    var graph = document.querySelector('#graph-scroll svg');
    var natural = naturalSize(graph);
    if (!graph || !natural) return;
    zoom = Math.min(4, Math.max(0.1, factor));
    graph.setAttribute('width', String(Math.round(natural.width * zoom)));
    graph.setAttribute('height', String(Math.round(natural.height * zoom)));
    graph.setAttribute('data-zoom', zoom.toFixed(2));
  }
  Array.prototype.forEach.call(document.querySelectorAll('button[data-zoom]'), function (button) {
    button.addEventListener('click', function () {
      var action = button.getAttribute('data-zoom');
      var graph = document.querySelector('#graph-scroll svg');
      var natural = naturalSize(graph);
      var box = graph && graph.parentNode ? graph.parentNode.clientWidth : 0;
      if (action === 'in') applyZoom(zoom * 1.25);
      else if (action === 'out') applyZoom(zoom / 1.25);
      else if (action === 'fit' && natural && box) applyZoom((box - 4) / natural.width);
      else applyZoom(1);
    });
  });

  // A failed run opens on the step it failed at; a link to a step (#step=id) wins.
  var initial = /^#step=(.+)$/.exec(location.hash);
  if (initial) select(decodeURIComponent(initial[1]));
  else if (data.failingStepId) select(data.failingStepId);

  window.stepwiseReport = {
    update: function (next) {
      var before = selectedId ? JSON.stringify(stepsById[selectedId]) : null;
      data = next;
      index();
      if (zoom !== 1) applyZoom(zoom);
      if (!selectedId) return;
      markSelected(selectedId);
      if (stepsById[selectedId] && JSON.stringify(stepsById[selectedId]) !== before) render(stepsById[selectedId]);
    },
    afterRender: function (hook) { renderHooks.push(hook); },
    select: select,
    selected: function () { return selectedId; },
  };
})();
`;

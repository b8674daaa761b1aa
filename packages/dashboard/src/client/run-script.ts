import { ELEMENT_FUNCTION } from '../report/element-function.js';

/**
 * The live run page's behaviour, beside the report's script (which draws the step details): a
 * Server-Sent Events stream (`api/runs/<id>/events`) brings each new journal event and, after each
 * batch, the report's pieces drawn again on the server (graph, timeline, steps, header, history),
 * which replace the old ones; and the actions (approve, deny, answer, cancel, continue with retry
 * or skip, approve the plan), posted with the session's token.
 *
 * Journal events go to `window.stepwiseLive.on(type, handler)` handlers too, and so do the live
 * output messages of a run going on in the dashboard's process (`tool-output`, `model-delta`),
 * which are also kept per step (the last 200,000 characters) and shown in the step's details
 * while it runs. Plain ES2017 without template literals; every value from the run is inserted
 * with textContent.
 */
export const RUN_SCRIPT = `
(function () {
  'use strict';
  function meta(name) { return document.querySelector('meta[name="' + name + '"]').getAttribute('content'); }
  var base = meta('stepwise-base');
  var token = meta('stepwise-token');
  var view = JSON.parse(document.getElementById('stepwise-view').textContent);
  var runUrl = base + '/api/runs/' + encodeURIComponent(view.runId);
  var actionsSection = document.getElementById('actions-section');
  var actionsBox = document.getElementById('actions');
  var notice = document.getElementById('notice');
  var liveState = document.getElementById('live-state');
  var eventList = document.getElementById('events');
  var handlers = {};
  var shownActions = null;

  ${ELEMENT_FUNCTION}
  function button(text, className, onClick) {
    var node = el('button', className, text);
    node.type = 'button';
    node.addEventListener('click', onClick);
    return node;
  }
  function say(text, ok) {
    notice.textContent = text;
    notice.className = 'notice ' + (ok ? 'ok' : 'error');
  }

  function post(action, buttons) {
    buttons.forEach(function (node) { node.disabled = true; });
    return fetch(runUrl + '/actions', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-stepwise-token': token },
      body: JSON.stringify(action),
    }).then(function (response) {
      return response.json().then(function (body) {
        if (response.ok) say(body.message, true);
        else say(body.error ? body.error.code + ' ' + body.error.message : 'refused (' + response.status + ')', false);
      });
    }).catch(function (error) {
      say('the dashboard did not answer: ' + error.message, false);
    }).then(function () {
      buttons.forEach(function (node) { node.disabled = false; });
    });
  }

  function pendingCard(request) {
    var card = el('div', 'card pending-request');
    card.setAttribute('data-step-id', request.stepId);
    card.setAttribute('data-request-id', request.requestId);
    if (request.kind === 'question') {
      card.appendChild(el('div', 'title', request.stepId + ' asks (' + request.cause + ')'));
      card.appendChild(el('p', null, request.question));
      var text = el('textarea');
      text.setAttribute('aria-label', 'answer to ' + request.stepId);
      card.appendChild(text);
      var answer = button('Answer', 'primary', function () {
        post({ kind: 'respond', requestId: request.requestId, answer: text.value }, [answer]);
      });
      var row = el('div', 'buttons'); row.appendChild(answer); card.appendChild(row);
      return card;
    }
    card.appendChild(el('div', 'title', request.stepId + ' wants to run ' + request.tool + ' (' + request.effect + ')'));
    card.appendChild(el('pre', null, JSON.stringify(request.args, null, 2)));
    var approve = button('Approve', 'primary', function () {
      post({ kind: 'respond', requestId: request.requestId, decision: 'approve' }, [approve, deny]);
    });
    var deny = button('Deny', 'danger', function () {
      post({ kind: 'respond', requestId: request.requestId, decision: 'deny' }, [approve, deny]);
    });
    var buttons = el('div', 'buttons'); buttons.appendChild(approve); buttons.appendChild(deny); card.appendChild(buttons);
    return card;
  }

  function continueTable(actions) {
    var box = el('div', 'card continue-run');
    box.appendChild(el('div', 'title', 'Continue the run'));
    var table = el('table');
    var choices = {};
    actions.retryable.forEach(function (stepId) {
      var tr = el('tr');
      tr.setAttribute('data-step-id', stepId);
      tr.appendChild(el('td', 'mono', stepId));
      ['leave', 'retry', 'skip'].forEach(function (choice) {
        if (choice === 'skip' && actions.skippable.indexOf(stepId) < 0) { tr.appendChild(el('td')); return; }
        var cell = el('td');
        var label = el('label');
        var radio = el('input');
        radio.type = 'radio';
        radio.name = 'continue-' + stepId;
        radio.value = choice;
        radio.checked = choice === 'leave';
        radio.addEventListener('change', function () { choices[stepId] = choice; });
        label.appendChild(radio);
        label.appendChild(document.createTextNode(' ' + choice));
        cell.appendChild(label);
        tr.appendChild(cell);
      });
      table.appendChild(tr);
    });
    box.appendChild(table);
    var go = button('Continue run', 'primary', function () {
      var retry = [];
      var skip = [];
      Object.keys(choices).forEach(function (stepId) {
        if (choices[stepId] === 'retry') retry.push(stepId);
        if (choices[stepId] === 'skip') skip.push(stepId);
      });
      post({ kind: 'continue', retry: retry, skip: skip }, [go]);
    });
    var buttons = el('div', 'buttons'); buttons.appendChild(go); box.appendChild(buttons);
    return box;
  }

  function renderActions(actions, planDigest) {
    var text = JSON.stringify([actions, planDigest]);
    if (text === shownActions) return;
    shownActions = text;
    actionsBox.textContent = '';
    if (actions.readOnly) { actionsSection.hidden = true; return; }
    actions.pending.forEach(function (request) { actionsBox.appendChild(pendingCard(request)); });
    var row = el('div', 'buttons');
    if (actions.planApproval) {
      actionsBox.appendChild(el('p', null, 'The plan was revised while the run went on; it continues once someone approves the plan as it is now (digest ' + planDigest.slice(0, 16) + '…).'));
      var approvePlan = button('Approve plan', 'primary', function () { post({ kind: 'approve-plan', planDigest: planDigest }, [approvePlan]); });
      row.appendChild(approvePlan);
    }
    if (actions.cancellable) {
      var cancel = button('Cancel run', 'danger', function () { post({ kind: 'cancel' }, [cancel]); });
      row.appendChild(cancel);
    }
    if (actions.resumable && actions.canContinue) {
      var resume = button('Resume run', 'primary', function () { post({ kind: 'continue', retry: [], skip: [] }, [resume]); });
      row.appendChild(resume);
    }
    if (row.childNodes.length) actionsBox.appendChild(row);
    if (actions.retryable.length && actions.canContinue) actionsBox.appendChild(continueTable(actions));
    if ((actions.retryable.length || actions.planApproval || actions.resumable) && !actions.canContinue) {
      actionsBox.appendChild(el('p', 'note', 'This dashboard cannot continue runs: continue this one with stepwise resume ' + view.runId + '.'));
    }
    actionsSection.hidden = actionsBox.childNodes.length === 0;
  }

  function show(next) {
    document.title = next.title;
    document.querySelector('body > header').innerHTML = next.parts.header;
    document.getElementById('graph-scroll').innerHTML = next.parts.graph;
    document.getElementById('timeline-scroll').innerHTML = next.parts.timeline;
    document.getElementById('steps').outerHTML = next.parts.steps;
    document.getElementById('history').innerHTML = next.parts.history;
    window.stepwiseReport.update(next.data);
    renderActions(next.actions, next.data.run.planDigest);
    document.body.setAttribute('data-status', next.status);
    document.body.setAttribute('data-seq', String(next.seq));
    view = next;
  }

  function logEvent(event) {
    var item = el('li');
    item.appendChild(el('span', 'seq', '#' + event.seq));
    item.appendChild(document.createTextNode(event.type + (event.stepId ? ' ' + event.stepId : '')));
    eventList.appendChild(item);
    while (eventList.childNodes.length > 500) eventList.removeChild(eventList.firstChild);
    eventList.scrollTop = eventList.scrollHeight;
    (handlers[event.type] || []).concat(handlers['*'] || []).forEach(function (handler) { handler(event); });
  }

  var outputs = {};
  var MAX_OUTPUT = 200000;
  function showOutput(event) {
    var text = (outputs[event.stepId] || '') + event.text;
    outputs[event.stepId] = text.length > MAX_OUTPUT ? text.slice(text.length - MAX_OUTPUT) : text;
    if (window.stepwiseReport.selected() === event.stepId) {
      var box = document.getElementById('live-output');
      if (box) {
        var follow = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
        box.textContent = outputs[event.stepId];
        if (follow) box.scrollTop = box.scrollHeight;
      } else window.stepwiseReport.select(event.stepId);
    }
    (handlers[event.type] || []).concat(handlers['*'] || []).forEach(function (handler) { handler(event); });
  }
  // Shown while the step runs; once it ends, its result holds the whole output.
  window.stepwiseReport.afterRender(function (step, panel) {
    if (outputs[step.id] === undefined || step.result) return;
    // Above the arguments and attempts: while a step runs, its output is what one looks at.
    var first = panel.querySelector('h3');
    var box = el('pre', 'live-output', outputs[step.id]);
    box.id = 'live-output';
    panel.insertBefore(el('h3', null, 'Output (live)'), first);
    panel.insertBefore(box, first);
    box.scrollTop = box.scrollHeight;
  });

  window.stepwiseLive = {
    on: function (type, handler) { (handlers[type] = handlers[type] || []).push(handler); },
  };

  renderActions(view.actions, view.planDigest);
  var stream = new EventSource(runUrl + '/events?after=' + view.seq);
  stream.addEventListener('journal', function (message) { logEvent(JSON.parse(message.data)); });
  stream.addEventListener('view', function (message) { show(JSON.parse(message.data)); });
  stream.addEventListener('output', function (message) { showOutput(JSON.parse(message.data)); });
  stream.addEventListener('open', function () { liveState.textContent = 'live'; liveState.className = 'live-state live'; });
  stream.addEventListener('error', function () { liveState.textContent = 'reconnecting'; liveState.className = 'live-state offline'; });
})();
`;

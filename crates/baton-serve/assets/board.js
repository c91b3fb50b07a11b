// baton's board: follows the server's event stream and updates the page in place.
// Plain EventSource, no framework, no build step. The event id is the journal's number, so a
// reconnecting browser resumes where it stopped (the browser sends Last-Event-ID itself).
(function () {
  "use strict";
  var body = document.body;
  var page = body.dataset.page;
  var status = document.getElementById("connection");
  var announce = document.getElementById("announce");

  function say(text) {
    if (announce) { announce.textContent = text; }
  }
  function data(e) {
    try { return JSON.parse(e.data); } catch (_) { return null; }
  }
  function storyOf(scope) {
    if (!scope || typeof scope !== "object") { return null; }
    var unit = scope.unit || (scope.agent && scope.agent.unit);
    return unit && unit.story ? unit.story : null;
  }
  function agentOf(scope, body) {
    if (scope && scope.agent && scope.agent.agent) { return scope.agent.agent; }
    return body && body.agent ? body.agent : null;
  }

  // Refreshes the elements named by `id` (one or more calls within 400 ms) from one fresh copy of
  // this page: a change the events do not carry in full.
  var refreshTimer = null;
  var pending = {};
  function refresh(id) {
    pending[id] = true;
    if (refreshTimer) { return; }
    refreshTimer = setTimeout(function () {
      refreshTimer = null;
      var ids = Object.keys(pending);
      pending = {};
      fetch(location.pathname, { headers: { Accept: "text/html" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (!html) { return; }
          var doc = new DOMParser().parseFromString(html, "text/html");
          var focused = document.activeElement && document.activeElement.id;
          ids.forEach(function (one) {
            var fresh = doc.getElementById(one);
            var old = document.getElementById(one);
            if (fresh && old) { old.replaceWith(fresh); }
          });
          if (focused) {
            var again = document.getElementById(focused);
            if (again && again !== document.activeElement) { again.focus(); }
          }
        })
        .catch(function () {});
    }, 400);
  }

  // The board: a story moves to the column of its new status.
  var columns = {};
  var colEl = document.getElementById("columns");
  if (colEl) {
    try { columns = JSON.parse(colEl.textContent); } catch (_) { columns = {}; }
  }
  function moveStory(key, to) {
    var card = document.getElementById("story-" + key);
    if (!card) {
      var m = /^epic-([^-]+)$/.exec(key);
      var badge = m && document.getElementById("epic-status-" + m[1]);
      if (badge) { badge.textContent = to; badge.className = "badge status-" + to; }
      return;
    }
    card.dataset.status = to;
    var column = columns[to];
    var badges = card.querySelector(".badges");
    var state = card.querySelector(".badge.state");
    var extended = column !== to;
    if (extended) {
      if (!state) {
        state = document.createElement("span");
        state.className = "badge state";
        badges.insertBefore(state, badges.firstChild);
      }
      state.textContent = to;
    } else if (state) {
      state.remove();
    }
    if (column) {
      var lane = card.closest(".lane");
      var target = lane && lane.querySelector('.column[data-column="' + column + '"] .cards');
      if (target && card.parentNode !== target) { target.appendChild(card); }
    }
    say(key + " is now " + to);
  }

  function markEscalated(key, id) {
    var card = key && document.getElementById("story-" + key);
    if (!card || card.querySelector(".badge.esc")) { return; }
    card.classList.add("escalated");
    var a = document.createElement("a");
    a.className = "badge esc";
    a.href = "/escalations#escalation-" + id;
    a.textContent = "escalation #" + id;
    card.querySelector(".badges").appendChild(a);
    var count = document.getElementById("open-escalations");
    if (count) {
      var n = (parseInt(count.textContent, 10) || 0) + 1;
      count.textContent = n + " open escalation" + (n === 1 ? "" : "s");
    }
  }

  // An answer, from any front end: the story's badge goes, and the summary (the open
  // escalations, the budget) is read again.
  function unmarkEscalated(key, id) {
    var card = key && document.getElementById("story-" + key);
    var badge = card && card.querySelector('.badge.esc[href$="#escalation-' + id + '"]');
    if (badge) {
      badge.remove();
      if (!card.querySelector(".badge.esc")) { card.classList.remove("escalated"); }
      var count = document.getElementById("open-escalations");
      if (count) {
        var n = Math.max(0, (parseInt(count.textContent, 10) || 0) - 1);
        count.textContent = n + " open escalation" + (n === 1 ? "" : "s");
      }
    }
    say("escalation #" + id + " answered");
  }

  // The budget counts the newest run: usage of that run adds up here, usage of another (a newer
  // run) means the page's budget is another run's, read again.
  function budgetRun() {
    var box = document.querySelector(".budget[data-run]");
    return box ? box.dataset.run : null;
  }

  // The story page: its transcript grows.
  function appendLine(d, text) {
    var list = document.getElementById("transcript");
    if (!list) { return; }
    var li = document.createElement("li");
    li.dataset.seq = d.seq;
    var time = document.createElement("time");
    time.dateTime = d.at;
    time.textContent = (d.at || "").slice(11, 19);
    var who = document.createElement("strong");
    who.textContent = agentOf(d.scope, d.body) || "run";
    li.appendChild(time);
    li.appendChild(document.createTextNode(" "));
    li.appendChild(who);
    li.appendChild(document.createTextNode(" " + text));
    list.appendChild(li);
  }
  function lineOf(b) {
    switch (b.event) {
      case "agent_started": return "started on " + b.model;
      case "turn": return "turn " + b.turn;
      case "tool_call": return "calls " + b.tool;
      case "refused": return "refused " + b.tool + ": " + b.reason;
      case "usage": return b.input_tokens + " in" +
        (b.cache_read_tokens || b.cache_write_tokens
          ? " (" + (b.cache_read_tokens || 0) + " cache read, " + (b.cache_write_tokens || 0) + " cache write)"
          : "") +
        " / " + b.output_tokens + " out tokens, $" + Number(b.cost_usd).toFixed(4);
      case "agent_finished": return "finished: " + b.status;
      case "stage": return "stage " + b.stage + " (round " + b.round + ") by " + b.agent;
      case "transition": return b.from + " → " + b.to;
      case "tests": return "tests " + (b.passed ? "passed" : "failed");
      case "commit": return "commit " + b.message;
      case "escalation": return "escalation #" + b.escalation.id + ": " + b.escalation.title;
      case "escalation_answered": return "escalation #" + b.escalation.id + " answered: " + b.escalation.answer;
      case "budget_warning": return "budget: " + b.message;
      case "story_finished": return "finished as " + b.status;
      case "merge": return "merge: " + b.phase + " " + (b.detail || "");
      default: return null;
    }
  }

  // The runs page: one row per agent, live tokens, dollars and elapsed time.
  function agentRow(d) {
    var tbody = document.getElementById("agents");
    if (!tbody) { return null; }
    var key = storyOf(d.scope) || "";
    var agent = agentOf(d.scope, d.body);
    var rows = tbody.querySelectorAll("tr");
    for (var i = rows.length - 1; i >= 0; i--) {
      if (rows[i].dataset.agent === agent && rows[i].dataset.key === key) { return rows[i]; }
    }
    return null;
  }
  function cell(tr, text, cls) {
    var td = document.createElement("td");
    if (cls) { td.className = cls; }
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }
  function onAgentEvent(d) {
    var b = d.body;
    var tbody = document.getElementById("agents");
    if (!tbody) { return; }
    if (b.event === "agent_started") {
      var tr = document.createElement("tr");
      var key = storyOf(d.scope) || "";
      tr.dataset.agent = agentOf(d.scope, b);
      tr.dataset.key = key;
      tr.dataset.started = d.at;
      var td = document.createElement("td");
      if (key) {
        var a = document.createElement("a");
        a.href = "/story/" + encodeURIComponent(key);
        a.textContent = key;
        td.appendChild(a);
      } else { td.textContent = "-"; }
      tr.appendChild(td);
      cell(tr, tr.dataset.agent);
      cell(tr, String(b.model).split("/")[0]);
      cell(tr, b.model);
      cell(tr, "0", "turns");
      cell(tr, "0 / 0", "tokens");
      cell(tr, "0 / 0", "cache");
      cell(tr, "$0.0000", "cost");
      cell(tr, "-", "elapsed");
      cell(tr, "running", "state");
      tbody.appendChild(tr);
      return;
    }
    var row = agentRow(d);
    if (!row) { return; }
    if (b.event === "turn") { row.querySelector(".turns").textContent = b.turn; }
    if (b.event === "usage") {
      var t = row.querySelector(".tokens").textContent.split(" / ");
      row.querySelector(".tokens").textContent =
        (Number(t[0]) + b.input_tokens) + " / " + (Number(t[1]) + b.output_tokens);
      var k = row.querySelector(".cache").textContent.split(" / ");
      row.querySelector(".cache").textContent =
        (Number(k[0]) + (b.cache_read_tokens || 0)) + " / " + (Number(k[1]) + (b.cache_write_tokens || 0));
      var c = Number(row.querySelector(".cost").textContent.slice(1)) + Number(b.cost_usd);
      row.querySelector(".cost").textContent = "$" + c.toFixed(4);
    }
    if (b.event === "agent_finished") {
      row.querySelector(".state").textContent = b.status;
      row.dataset.finished = "1";
    }
  }
  function addSpend(usd) {
    var spent = document.getElementById("budget-spent");
    if (!spent) { return; }
    var total = Number(spent.textContent.replace("$", "")) + usd;
    spent.textContent = "$" + total.toFixed(4);
    var meter = document.getElementById("budget-meter");
    var box = meter && meter.closest(".budget");
    var limit = box && Number(box.dataset.hard || box.dataset.warn);
    if (meter && meter.tagName === "METER" && limit > 0) {
      meter.value = Math.min(100, total / limit * 100);
    }
  }
  setInterval(function () {
    var rows = document.querySelectorAll("#agents tr[data-started]");
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].dataset.finished) { continue; }
      var s = Math.max(0, Math.round((Date.now() - Date.parse(rows[i].dataset.started)) / 1000));
      var el = rows[i].querySelector(".elapsed");
      if (el && !isNaN(s)) { el.textContent = Math.floor(s / 60) + "m " + (s % 60) + "s"; }
    }
  }, 1000);

  var lastMove = 0;
  function onEvent(e) {
    var d = data(e);
    if (!d || !d.body) { return; }
    var b = d.body;
    var key = storyOf(d.scope) || b.key || null;
    if (page === "board") {
      if (b.event === "transition") { lastMove = Date.now(); moveStory(b.key, b.to); }
      if (b.event === "escalation" && b.escalation) { markEscalated(b.escalation.key, b.escalation.id); }
      if (b.event === "escalation_answered" && b.escalation) {
        unmarkEscalated(b.escalation.key, b.escalation.id);
        refresh("summary");
      }
      if (b.event === "merge") { refresh("lanes"); }
    }
    if ((page === "board" || page === "runs") && b.event === "usage") {
      if (budgetRun() === d.run) { addSpend(Number(b.cost_usd)); } else { refresh(page === "board" ? "summary" : "main"); }
    }
    if (page === "runs") {
      onAgentEvent(d);
      if (b.event === "run_started") { refresh("main"); }
    }
    if (page === "escalations" && (b.event === "escalation" || b.event === "escalation_answered")) {
      refresh("open");
    }
    var storyKey = body.dataset.key;
    if (storyKey && key === storyKey) {
      var text = lineOf(b);
      if (text) { appendLine(d, text); }
      if (b.event === "transition") {
        var st = document.getElementById("story-status");
        if (st) { st.textContent = b.to; }
      }
    }
  }

  var names = ["run_started", "notice", "stage", "transition", "tests", "commit", "commit_failed",
    "escalation", "story_finished", "agent_started", "turn", "tool_call", "refused", "usage",
    "budget_warning", "agent_finished", "merge", "op_rejected", "escalation_answered", "message"];
  var source = new EventSource("/events?after=" + encodeURIComponent(body.dataset.seq || "0"));
  names.forEach(function (n) { source.addEventListener(n, onEvent); });
  source.addEventListener("board", function () {
    // A run's own moves came as `transition` events already; refresh only for the others
    // (`baton set`, an edit), which carry no detail.
    if (page === "board" && Date.now() - lastMove > 1500) { refresh("lanes"); }
    if (page === "escalations") { refresh("open"); }
  });
  source.onopen = function () {
    if (status) { status.textContent = "live"; status.className = "connection live"; }
  };
  source.onerror = function () {
    if (status) { status.textContent = "reconnecting…"; status.className = "connection lost"; }
  };
})();

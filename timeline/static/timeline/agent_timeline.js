/* The agent's timeline page: live tail, what the agent is doing now, operator's time zone, type
 * chips, j/k and "/".
 *
 * The page works without this file (paged HTML); this only enhances it. No
 * framework and no inline script: the page's Content-Security-Policy may
 * forbid inline code. Committed rows are rendered by the server (the page's
 * own URL with ?fragment=rows), so every row looks the same whether it came
 * with the page or live; provisional items, which the server never stores,
 * are drawn here until the committed row replaces them.
 */
(function () {
  "use strict";

  var page = document.getElementById("timeline-page");
  if (!page) return;
  var rowsBox = document.getElementById("timeline");
  var provisionalBox = document.getElementById("tl-provisional");
  var statusBox = document.getElementById("tl-live-status");
  var params = new URLSearchParams(window.location.search);

  // --- Time zone: the server renders times in the zone named by the chartr_tz cookie.
  function followBrowserZone() {
    var zone;
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { return false; }
    if (!zone || params.get("tz") || page.dataset.zone === zone) return false;
    var cookieName = page.dataset.tzCookie;
    var current = document.cookie.split("; ").filter(function (c) { return c.indexOf(cookieName + "=") === 0; })[0];
    if (current === cookieName + "=" + encodeURIComponent(zone)) return false; // the server refused it: keep its zone
    document.cookie = cookieName + "=" + encodeURIComponent(zone) + "; path=/; max-age=31536000; SameSite=Lax";
    window.location.reload();
    return true;
  }
  if (followBrowserZone()) return;

  // --- Type chips submit as soon as one is toggled.
  var filterForm = document.getElementById("tl-filter-form");
  if (filterForm) {
    filterForm.addEventListener("change", function (event) {
      if (event.target && event.target.name === "type") filterForm.submit();
    });
  }

  // --- Keyboard: j/k move between rows, "/" focuses the search box.
  function rows() { return Array.prototype.slice.call(document.querySelectorAll("#timeline .tl-row, #tl-provisional .tl-row")); }
  var current = null;
  function select(row) {
    if (!row) return;
    if (current) current.classList.remove("tl-current");
    current = row;
    row.classList.add("tl-current");
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    if (event.key === "/") {
      var search = document.getElementById("tl-search");
      if (search) { event.preventDefault(); search.focus(); search.select(); }
      return;
    }
    if (event.key !== "j" && event.key !== "k") return;
    var all = rows();
    if (!all.length) return;
    var index = current ? all.indexOf(current) : -1;
    if (index < 0) index = event.key === "j" ? -1 : all.length;
    select(all[Math.max(0, Math.min(all.length - 1, index + (event.key === "j" ? 1 : -1)))]);
    event.preventDefault();
  });
  var hit = document.querySelector("#timeline .tl-hit");
  if (hit) select(hit);

  // --- The newest page opens at its newest row (a link to a row opens at that row instead).
  // The browser restoring the previous scroll position on a reload would undo it.
  function openAtNewest() {
    if (rowsBox && rowsBox.lastElementChild) rowsBox.lastElementChild.scrollIntoView({ block: "end" });
  }
  if (page.dataset.live === "1" && !window.location.hash) {
    if ("scrollRestoration" in window.history) window.history.scrollRestoration = "manual";
    openAtNewest();
    window.addEventListener("load", openAtNewest);
  }

  // --- Times the script writes, as the server does: "2026-01-01 13:07:00 CET" in the page's zone.
  function formatTime(iso) {
    var date = new Date(iso);
    if (isNaN(date.getTime())) return String(iso);
    var parts = {};
    try {
      new Intl.DateTimeFormat("en-GB", {
        timeZone: page.dataset.zone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit",
        minute: "2-digit", second: "2-digit", hourCycle: "h23", timeZoneName: "short"
      }).formatToParts(date).forEach(function (part) { parts[part.type] = part.value; });
    } catch (e) { return date.toISOString(); }
    return parts.year + "-" + parts.month + "-" + parts.day + " " + parts.hour + ":" + parts.minute + ":" +
      parts.second + " " + parts.timeZoneName;
  }
  function setTime(node, iso) {
    node.setAttribute("datetime", iso);
    node.textContent = formatTime(iso);
  }

  // --- What the agent is doing now, from the stream's agent events (and its rows' commit times).
  function showAgent(data) {
    var lifecycle = document.getElementById("tl-lifecycle");
    if (lifecycle && typeof data.lifecycle === "string") {
      lifecycle.textContent = data.lifecycle;
      lifecycle.className = "tl-lifecycle tl-lifecycle-" + data.lifecycle;
    }
    var attention = document.getElementById("tl-attention");
    if (attention && typeof data.requires_attention === "boolean") {
      attention.textContent = "";
      attention.setAttribute("data-requires", data.requires_attention ? "1" : "0");
      if (data.requires_attention) {
        var reason = document.createElement("strong");
        reason.textContent = data.attention_reason || "unspecified";
        attention.appendChild(document.createTextNode("Needs attention: "));
        attention.appendChild(reason);
        if (data.attention_at) {
          var since = document.createElement("time");
          setTime(since, data.attention_at);
          attention.appendChild(document.createTextNode(" since "));
          attention.appendChild(since);
        }
      } else {
        attention.textContent = "No attention needed";
      }
    }
    var archived = document.getElementById("tl-archived");
    if (archived && "archived_at" in data) archived.hidden = !data.archived_at;
  }
  function showActivity(iso) {
    var last = document.getElementById("tl-last-activity");
    if (!last || !iso) return;
    var shown = Date.parse(last.getAttribute("datetime") || "");
    if (isNaN(shown) || Date.parse(iso) > shown) setTime(last, iso);
  }

  // --- Live tail: only on the newest page, which the new rows continue.
  if (page.dataset.live !== "1" || !window.EventSource || !rowsBox) return;
  var wanted = params.getAll("type");
  var fetchedThrough = parseInt(page.dataset.through, 10) || 0;
  var committedThrough = fetchedThrough;
  var fetching = false;

  function showStatus(text, live) {
    statusBox.hidden = false;
    statusBox.textContent = text;
    statusBox.classList.toggle("tl-live-on", !!live);
  }

  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 200;
  }

  function dropProvisional(row) {
    var itemId = row.getAttribute("data-item-id");
    Array.prototype.forEach.call(provisionalBox.querySelectorAll(".tl-row"), function (draft) {
      var draftId = draft.getAttribute("data-item-id");
      if (itemId ? draftId === itemId : !draftId && draft.getAttribute("data-item-type") === row.getAttribute("data-item-type")) {
        draft.remove();
      }
    });
  }

  // --- A tool call's later state: its entry is replaced where it stands, not appended again.
  function lastSeq(row) { return parseInt(row.getAttribute("data-last-seq") || row.getAttribute("data-seq"), 10) || 0; }
  function sameCall(call) {
    return Array.prototype.filter.call(rowsBox.querySelectorAll(".tl-row[data-call]"), function (row) {
      return row.getAttribute("data-call") === call;
    })[0] || null;
  }
  function replaceCall(existing, node) {
    // The entry keeps its place, its seq and its header; the states this page holds stay anchors here.
    var ownSeq = node.getAttribute("data-seq");
    node.id = existing.id;
    node.setAttribute("data-seq", existing.getAttribute("data-seq"));
    var meta = node.querySelector(".tl-meta"), oldMeta = existing.querySelector(".tl-meta");
    if (meta && oldMeta) node.replaceChild(oldMeta.cloneNode(true), meta);
    Array.prototype.forEach.call(node.querySelectorAll(".tl-states li[data-seq]"), function (state) {
      var seq = state.getAttribute("data-seq");
      var here = seq === ownSeq || state.id || seq === existing.getAttribute("data-seq") ||
        document.getElementById("seq-" + seq);
      if (!here) return;
      var link = state.querySelector("a");
      if (link) { link.setAttribute("href", "#seq-" + seq); link.removeAttribute("title"); }
      if (seq !== existing.getAttribute("data-seq")) state.id = "seq-" + seq;
    });
    var wasOpen = existing.querySelector("details.tl-tool");
    var details = node.querySelector("details.tl-tool");
    if (wasOpen && details) details.open = wasOpen.open;
    var wasCurrent = existing === current;
    if (wasCurrent) current = node;
    node.classList.toggle("tl-current", wasCurrent);
    node.classList.add("tl-updated");
    existing.replaceWith(node);
  }

  function fetchCommitted() {
    if (fetching || committedThrough <= fetchedThrough) return;
    fetching = true;
    var query = new URLSearchParams();
    wanted.forEach(function (name) { query.append("type", name); });
    if (params.get("tz")) query.set("tz", params.get("tz"));
    query.set("fragment", "rows");
    query.set("after_seq", String(fetchedThrough));
    var follow = nearBottom();
    fetch(window.location.pathname + "?" + query.toString(), { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        var fragment = new DOMParser().parseFromString(html, "text/html").getElementById("tl-fragment");
        var empty = rowsBox.querySelector(".tl-empty");
        Array.prototype.forEach.call(fragment.querySelectorAll(".tl-row"), function (row) {
          var call = row.getAttribute("data-call");
          var existing = call ? sameCall(call) : null;
          if (existing) {
            if (lastSeq(row) > lastSeq(existing)) replaceCall(existing, document.importNode(row, true));
            return;
          }
          if (document.getElementById(row.id)) return;
          var node = document.importNode(row, true);
          node.classList.add("tl-new");
          rowsBox.appendChild(node);
          dropProvisional(node);
          if (empty) { empty.remove(); empty = null; }
        });
        var through = parseInt(fragment.getAttribute("data-through"), 10) || parseInt(fragment.getAttribute("data-max-seq"), 10);
        if (through > fetchedThrough) fetchedThrough = through;
        document.getElementById("tl-head").textContent = String(Math.max(committedThrough, fetchedThrough));
        if (follow && rowsBox.lastElementChild) rowsBox.lastElementChild.scrollIntoView({ block: "end" });
      })
      .catch(function () { showStatus("could not load new rows; retrying", false); })
      .then(function () {
        fetching = false;
        if (committedThrough > fetchedThrough) window.setTimeout(fetchCommitted, 250);
      });
  }

  function provisionalText(item) {
    if (typeof item.text === "string") return item.text;
    if (typeof item.message === "string") return item.message;
    var rest = {};
    Object.keys(item).forEach(function (key) { if (key !== "type") rest[key] = item[key]; });
    return JSON.stringify(rest, null, 2);
  }

  function showProvisional(data) {
    var item = data.item || {};
    var type = String(item.type || "");
    if (wanted.length && wanted.indexOf(type) < 0) return;
    var itemId = data.item_id || "";
    var existing = Array.prototype.filter.call(provisionalBox.querySelectorAll(".tl-row"), function (draft) {
      return itemId ? draft.getAttribute("data-item-id") === itemId
        : !draft.getAttribute("data-item-id") && draft.getAttribute("data-item-type") === type;
    })[0];
    var row = existing || document.createElement("div");
    row.className = "tl-row tl-provisional tl-" + type;
    row.setAttribute("data-item-type", type);
    row.setAttribute("tabindex", "-1");
    if (itemId) row.setAttribute("data-item-id", itemId);
    row.textContent = "";
    var meta = document.createElement("div");
    meta.className = "tl-meta";
    meta.textContent = "provisional · " + type + (itemId ? " · id " + itemId : "") + " · not committed yet";
    var body = document.createElement("pre");
    body.className = "tl-text";
    body.textContent = provisionalText(item);
    row.appendChild(meta);
    row.appendChild(body);
    if (!existing) provisionalBox.appendChild(row);
  }

  var source = new EventSource(page.dataset.streamUrl + "?after_seq=" + fetchedThrough);
  source.addEventListener("open", function () { showStatus("live", true); });
  source.addEventListener("error", function () { showStatus("reconnecting…", false); });
  source.addEventListener("committed", function (event) {
    var seq = parseInt(event.lastEventId, 10);
    if (seq > committedThrough) committedThrough = seq;
    fetchCommitted();
    try { showActivity(JSON.parse(event.data).committed_at); } catch (e) { /* the row still comes from the server */ }
  });
  source.addEventListener("provisional", function (event) { showProvisional(JSON.parse(event.data)); });
  source.addEventListener("reset", function () {
    showStatus("this history was replaced: reload the page", false);
    source.close();
  });
  source.addEventListener("agent", function (event) {
    var data = JSON.parse(event.data);
    if (data.deleted) { showStatus("this agent was deleted", false); source.close(); return; }
    showAgent(data);
  });
})();

/* chartr's admin, every page (templates/admin/base_site.html); no inline script under the Content-Security-Policy. */
(function () {
  "use strict";

  // One time zone everywhere: the server renders every time in the zone the chartr_tz cookie names
  // (kernel/zones.py) and names it in #chartr-zone; the cookie follows the browser's own zone.
  function followBrowserZone() {
    var named = document.getElementById("chartr-zone");
    var zone;
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { return; }
    if (!named || !zone || named.dataset.zone === zone) return;
    if (new URLSearchParams(window.location.search).get("tz")) return; // a zone asked for by name wins
    var cookieName = named.dataset.tzCookie;
    var wanted = cookieName + "=" + encodeURIComponent(zone);
    if (document.cookie.split("; ").indexOf(wanted) !== -1) return; // the server refused it: keep its zone
    document.cookie = wanted + "; path=/; max-age=31536000; SameSite=Lax";
    if (document.querySelector("form[method=post] input[type=text], textarea")) return; // never lose typed input
    window.location.reload();
  }

  // Cells cut short by the stylesheet (text-overflow: ellipsis) show their whole text on hover.
  function titleTruncatedCells() {
    var cells = document.querySelectorAll("#result_list td, #result_list th, #chartr-dashboard td, .chartr-truncate");
    Array.prototype.forEach.call(cells, function (cell) {
      if (!cell.title && cell.scrollWidth > cell.clientWidth) cell.title = cell.textContent.trim();
    });
  }

  followBrowserZone();
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", titleTruncatedCells);
  } else {
    titleTruncatedCells();
  }
})();

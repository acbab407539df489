/* The fleet search page: times in the browser's zone, as on the agent's timeline page.
 *
 * The server renders times (and reads the form's) in the zone the chartr_tz
 * cookie names; this sets it from the browser once and reloads. The page
 * works without it, in the server's zone. No inline script: the page's
 * Content-Security-Policy may forbid it.
 */
(function () {
  "use strict";

  var page = document.getElementById("fleet-search");
  if (!page) return;
  var zone;
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { return; }
  if (!zone || new URLSearchParams(window.location.search).get("tz") || page.dataset.zone === zone) return;
  var cookieName = page.dataset.tzCookie;
  var current = document.cookie.split("; ").filter(function (c) { return c.indexOf(cookieName + "=") === 0; })[0];
  if (current === cookieName + "=" + encodeURIComponent(zone)) return; // the server refused it: keep its zone
  document.cookie = cookieName + "=" + encodeURIComponent(zone) + "; path=/; max-age=31536000; SameSite=Lax";
  window.location.reload();
})();

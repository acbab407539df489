"use strict";
// The new API token page: one click selects the whole token for copying.
document.getElementById("raw-token")?.addEventListener("click", (event) => event.target.select());

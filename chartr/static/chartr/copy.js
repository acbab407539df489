"use strict";
// Buttons with data-copy (an agent's whole id beside its short one) copy that text to the clipboard.
// navigator.clipboard needs a secure context (https or localhost); elsewhere a selected textarea and
// execCommand("copy") do it.
function chartrCopy(text) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "copy-scratch";
  document.body.appendChild(area);
  area.select();
  const copied = document.execCommand("copy");
  area.remove();
  return copied ? Promise.resolve() : Promise.reject(new Error("copy refused"));
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button.copy-button[data-copy]");
  if (!button) return;
  event.preventDefault();
  chartrCopy(button.dataset.copy).then(
    () => { button.textContent = "copied"; button.dataset.copied = "yes"; },
    () => { button.textContent = "press Ctrl+C"; },
  );
  setTimeout(() => { button.textContent = "copy"; }, 2000);
});

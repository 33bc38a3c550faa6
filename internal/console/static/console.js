// The console works without this file; it adds "select all" to the
// dead-letter list and a confirmation to destructive actions.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("input.select-all").forEach(function (all) {
    all.addEventListener("change", function () {
      var form = all.closest("form");
      form.querySelectorAll("input.sel").forEach(function (box) { box.checked = all.checked; });
    });
  });
  document.querySelectorAll("form.confirm").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      if (!window.confirm(form.dataset.confirm)) { ev.preventDefault(); }
    });
  });
  document.querySelectorAll("button.confirm-button").forEach(function (button) {
    button.addEventListener("click", function (ev) {
      if (!window.confirm(button.dataset.confirm)) { ev.preventDefault(); }
    });
  });
});

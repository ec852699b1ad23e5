// Presses that come before the page's scripts are ready.
//
// The lab and the exercises are ES modules; on a slow line, or while the page's
// language catalog loads, a learner can press Count or Check before the module
// that handles it has run. The browser would then submit the form the plain way
// (reloading the page with the form in its address) and the press would be lost.
// This classic script runs first, from <head>: it stops every native form
// submission (a static site has nowhere to send one), keeps the last press of
// each button, and replays it once the part of the page holding that button says
// it is ready: window.canneryReady(element).
(function () {
  "use strict";
  let early = [];
  const ready = [];

  function isReady(element) {
    for (let i = 0; i < ready.length; i++) if (ready[i].contains(element)) return true;
    return false;
  }

  function keep(button) {
    if (!button || isReady(button) || early.indexOf(button) >= 0) return;
    early.push(button);
  }

  document.addEventListener(
    "submit",
    function (event) {
      event.preventDefault(); // the handlers that are ready still run; the page never reloads
      keep(event.submitter);
    },
    true,
  );
  document.addEventListener(
    "click",
    function (event) {
      const button = event.target instanceof Element ? event.target.closest("button") : null;
      if (button && button.type !== "submit") keep(button); // a submit button is kept on submit
    },
    true,
  );

  /** The part of the page in `root` now handles its presses: replay the ones it missed. */
  window.canneryReady = function (root) {
    ready.push(root);
    const missed = early.filter(function (button) {
      return root.contains(button);
    });
    early = early.filter(function (button) {
      return !root.contains(button);
    });
    missed.forEach(function (button) {
      if (!button.disabled) button.click();
    });
  };
})();

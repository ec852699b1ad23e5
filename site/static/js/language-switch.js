// The language switch (the links at the top of every page, built from
// site/content/languages.toml) carries the page's fragment along, so the lab's
// settings (#kernel=fused&n=4096...) and the place on the page survive the switch.
// The lab writes its settings with history.replaceState, which fires no event,
// so each link also takes the fragment again just before it is followed or copied.
const links = [...document.querySelectorAll("a[data-language-switch]")];

function follow() {
  for (const link of links) {
    const base = link.getAttribute("href").split("#")[0];
    link.setAttribute("href", base + window.location.hash);
  }
}

follow();
window.addEventListener("hashchange", follow);
for (const link of links) {
  for (const event of ["click", "focus", "pointerenter", "contextmenu", "auxclick"]) {
    link.addEventListener(event, follow);
  }
}

// The language switch (the links at the top of every page, built from
// site/content/languages.toml) carries the page's fragment along, so the lab's
// settings (#kernel=fused&n=4096...) and the place on the page survive the switch.
for (const link of document.querySelectorAll("a[data-language-switch]")) {
  const base = link.getAttribute("href").split("#")[0];
  const follow = () => {
    link.setAttribute("href", base + window.location.hash);
  };
  link.addEventListener("click", follow);
  link.addEventListener("focus", follow);
  link.addEventListener("pointerenter", follow);
}

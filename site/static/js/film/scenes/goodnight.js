// Scene 10, goodnight: the summary picture (one Q tile, m and l, O written
// once), then the goodnight over it.
import { _ } from "../../i18n.js";
import { W, dual, el, memory } from "../draw.js";

/** Scene 10 on its group g0, with the film's stage (see ../scenes.js). */
export function goodnight(g0, { T, tl, hide, fadeIn }) {
  const g = el(g0, "g", {}); // the summary picture; it steps back for the goodnight
  memory(g, 70, 170);
  el(g, "rect", { x: 270, y: 100, width: 120, height: 110, rx: 4, class: "fill-q" });
  el(g, "text", { x: 330, y: 162, "text-anchor": "middle", class: "film-on", "font-size": 18 }, _("Q tile"));
  dual(g, { x: 405, y: 125, class: "film-text text-m" }, _("m: running largest"), _("m: largest"));
  dual(g, { x: 405, y: 170, class: "film-text text-l" }, _("l: running total"), _("l: total"));
  const o = el(g, "g", {});
  el(o, "rect", { x: 610, y: 150, width: 80, height: 60, rx: 4, class: "fill-o" });
  el(o, "text", { x: 650, y: 188, "text-anchor": "middle", class: "film-on", "font-size": 18 }, "O");
  tl.to(o, { y: 240, duration: 2, ease: "power1.inOut" }, T("sum") + 2);
  const once = el(g, "text", { x: 710, y: 440, class: "film-text" }, _("written once"));
  hide(once);
  fadeIn(once, T("sum") + 4);
  tl.to(g, { autoAlpha: 0.12, duration: 0.6 }, T("bye"));
  const bye = el(g0, "text", { x: W / 2, y: 290, "text-anchor": "middle", class: "film-title" }, _("Goodnight."));
  hide(bye);
  fadeIn(bye, T("bye"), 0.8);
}

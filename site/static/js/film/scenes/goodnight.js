// Scene 10, goodnight: the summary picture (one Q tile, m and l, O written
// once), then the goodnight over it.
import { _ } from "../../i18n.js";
import { W, dual, el, memory } from "../draw.js";

/** Scene 10 on its group g0, with the film's stage (see ../scenes.js). */
export function goodnight(g0, { T, tl, hide, fadeIn }) {
  const g = el(g0, "g", {}); // the summary picture; it steps back for the goodnight
  memory(g, 70, 170);
  el(g, "rect", { x: 270, y: 100, width: 120, height: 110, rx: 4, class: "fill-q" });
  dual(g, { x: 330, y: 162, "text-anchor": "middle", class: "film-on", "font-size": 18 }, _("Q tile"), "Q");
  dual(g, { x: 405, y: 125, class: "film-text text-m" }, _("m: running largest"), _("m: largest"));
  dual(g, { x: 405, y: 170, class: "film-text text-l" }, _("l: running total"), _("l: total"));
  // O, finished on the bench above the door, goes down through it, once
  const o = el(g, "g", {});
  el(o, "rect", { x: 440, y: 182, width: 80, height: 50, rx: 4, class: "fill-o" });
  el(o, "text", { x: 480, y: 215, "text-anchor": "middle", class: "film-on", "font-size": 18 }, "O");
  tl.to(o, { y: 230, duration: 1.6, ease: "power1.inOut" }, T("sum") + 0.4);
  const once = el(g, "text", { x: 530, y: 445, class: "film-text" }, _("written once"));
  hide(once);
  fadeIn(once, T("sum") + 2.0);
  // it steps back, gone, so that none of its words shows through the goodnight
  tl.to(g, { autoAlpha: 0, duration: 0.4 }, T("bye"));
  const bye = el(g0, "text", { x: W / 2, y: 290, "text-anchor": "middle", class: "film-title" }, _("Goodnight."));
  hide(bye);
  fadeIn(bye, T("bye") + 0.4, 0.6);
}

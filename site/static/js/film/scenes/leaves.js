// Scene 9, what the count leaves out: four cards, one per caption.
import { _ } from "../../i18n.js";
import { W, el } from "../draw.js";

/** Scene 9 on its group g, with the film's stage (see ../scenes.js). */
export function leaves(g, { T, hide, fadeIn }) {
  el(g, "text", { x: W / 2, y: 44, "text-anchor": "middle", class: "film-big" }, _("what the count leaves out"));
  const cards = [
    ["care", _("bytes requested, not seconds")],
    ["caches", _("caches may serve repeated reads")],
    ["arith", _("fusion adds rescaling arithmetic")],
    ["lab", _("the lab times both on your chip")],
  ];
  cards.forEach(([id, text], k) => {
    const c = el(g, "g", {});
    el(c, "rect", { x: 40, y: 70 + k * 105, width: 880, height: 85, rx: 10, class: "film-box" });
    el(c, "text", { x: 70, y: 122 + k * 105, class: "film-big film-card-text" }, text);
    hide(c);
    fadeIn(c, T(id) + 0.2);
  });
}

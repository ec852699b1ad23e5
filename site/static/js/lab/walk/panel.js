// Beside the drawing: the bench (workgroup memory) with the tiles it holds at this
// step, and the running tally, per tensor, as a table and as bars against Count's total.
import { _ } from "../../i18n.js";
import { fmt, size } from "../format.js";
import { html, setHtml } from "../html.js";
import { passAxes, tilesText } from "./words.js";

/** The tiles on the bench after step `step` (null: before the walk), as chips labelled with their tensor. */
export function renderBench(box, walk, step) {
  const title = _("The bench (workgroup memory), M = {m} B", { m: fmt(walk.r.workgroup_bytes) });
  const chips = [];
  if (step && step.phase === "once") {
    const moved = walk.tensors.map((t) => t.name).filter((t) => t in step.reads || t in step.writes);
    chips.push(...moved.map((t) => ({ tensor: t, text: _("every row, once") })));
  } else if (step) {
    const [outerAxis, innerAxis] = passAxes(step.spec);
    const roleOf = (t) => step.spec.reads[t] || step.spec.writes[t];
    const order = walk.tensors.map((t) => t.name);
    // the tiles held on the bench first, then those walking past, in the display order
    for (const t of order.filter((t) => roleOf(t) === "bench")) {
      chips.push({ tensor: t, text: tilesText(walk, outerAxis, step.outer) });
    }
    if (step.phase === "stream") {
      for (const t of order.filter((t) => roleOf(t) === "stream")) {
        chips.push({ tensor: t, text: tilesText(walk, innerAxis, step.inner) });
      }
      for (const t of order.filter((t) => roleOf(t) === "table")) {
        chips.push({ tensor: t, text: _("one tile of the table") });
      }
    }
    if (step.phase === "stream" && !walk.hasTables) chips.push({ tensor: null, text: _("their scores, never stored") });
  }
  const empty = _("empty");
  setHtml(
    box,
    html`<p class="walk-bench-title">${title}</p>
    <ul class="walk-chips">${
      chips.length
        ? chips.map(
            (c) =>
              html`<li class="walk-chip${c.tensor ? ` chip-${c.tensor}` : ""}">${c.tensor ? html`<span class="tensor t-${c.tensor}">${c.tensor}</span> ` : ""}${c.text}</li>`,
          )
        : html`<li class="walk-chip">${empty}</li>`
    }</ul>`,
  );
}

/** The tally after `done` steps: a table per tensor and bars against the whole walk (Count's total). */
export function renderTally(box, walk, tally, order, moving) {
  const w = {
    caption: _("The tally so far, bytes per tensor"),
    tensor: _("Tensor"),
    read: _("Read (bytes)"),
    written: _("Written (bytes)"),
    total: _("Total"),
    sum: _("{bytes} of {total} bytes", { bytes: fmt(tally.total), total: fmt(walk.totalBytes) }),
  };
  const rows = order.map(
    (t) =>
      html`<tr${moving.has(t) ? html` class="walk-moving"` : ""}><th scope="row"><span class="tensor t-${t}">${t}</span></th><td>${fmt(tally.reads[t] || 0)}</td><td>${fmt(tally.writes[t] || 0)}</td></tr>`,
  );
  setHtml(
    box,
    html`<table class="numbers compact walk-table"><caption>${w.caption}</caption>
    <thead><tr><th scope="col">${w.tensor}</th><th scope="col">${w.read}</th><th scope="col">${w.written}</th></tr></thead>
    <tbody>${rows}</tbody>
    <tfoot><tr><th scope="row">${w.total}</th><td colspan="2" id="walk-total">${w.sum}</td></tr></tfoot></table>
    <div class="walk-bars"></div>`,
  );
  const whole = { reads: {}, writes: {} };
  for (const kind of ["reads", "writes"]) {
    for (const [t, e] of Object.entries(walk.total[kind])) whole[kind][t] = e * walk.bytes;
  }
  const bars = box.querySelector(".walk-bars");
  bars.append(
    bar(_("So far: {done} of {total}", { done: size(tally.total), total: size(walk.totalBytes) }), tally, walk, order),
    bar(_("The whole walk, as Count counts it: {total}", { total: size(walk.totalBytes) }), whole, walk, order),
  );
}

/**
 * One bar of bytes per tensor (HTML, so its words stay readable at any width), from
 * zero to the whole walk's bytes: its segments take the bar chart's colours (sw-<tensor>).
 */
function bar(label, moved, walk, order) {
  const box = document.createElement("div");
  box.className = "walk-bar";
  const words = document.createElement("p");
  words.className = "walk-bar-label";
  words.textContent = label;
  const track = document.createElement("div");
  track.className = "walk-bar-track";
  track.setAttribute("aria-hidden", "true");
  for (const t of order) {
    const bytes = (moved.reads[t] || 0) + (moved.writes[t] || 0);
    if (!bytes) continue;
    const part = document.createElement("span");
    part.className = `sw-${t}`;
    part.title = `${t}: ${fmt(bytes)} B`;
    part.style.width = `${(100 * bytes) / walk.totalBytes}%`; // CSSOM, which the CSP allows
    track.appendChild(part);
  }
  box.append(words, track);
  return box;
}

// The walk in words: what the current step does, with its numbers, in the page's
// language. This is the picture's text alternative and what its live region reads.
import { _, lang, ngettext } from "../../i18n.js";
import { fmt } from "../format.js";

const list = new Intl.ListFormat(lang, { type: "conjunction" });

/** "K 4,096 B and V 4,096 B" for {tensor: bytes}, in the manifest's display order. */
export function movesText(moved, order) {
  return list.format(order.filter((t) => moved[t]).map((t) => `${t} ${fmt(moved[t])} B`));
}

/** "query tile 3 (rows 384–511)" or "query tiles 8–15 (rows 1,024–2,047)" for one mark of an axis. */
export function tilesText(walk, axis, mark) {
  const [a, b, t0, t1] = (axis === "query" ? walk.r.query_marks : walk.r.key_marks)[mark];
  const values = { i: fmt(t0), j: fmt(t1 - 1), a: fmt(a), b: fmt(b - 1) };
  if (t1 - t0 === 1) {
    return axis === "query" ? _("query tile {i} (rows {a}–{b})", values) : _("key tile {i} (rows {a}–{b})", values);
  }
  return axis === "query"
    ? _("query tiles {i}–{j} (rows {a}–{b})", values)
    : _("key tiles {i}–{j} (rows {a}–{b})", values);
}

/** "past query tile 3 (rows 384–511)": the tiles on the bench that a stream walks past (its own words,
 * so that a language can join its preposition to its article, as Portuguese does: "pelo bloco"). */
export function pastText(walk, axis, mark) {
  const [a, b, t0, t1] = (axis === "query" ? walk.r.query_marks : walk.r.key_marks)[mark];
  const values = { i: fmt(t0), j: fmt(t1 - 1), a: fmt(a), b: fmt(b - 1) };
  if (t1 - t0 === 1) {
    return axis === "query"
      ? _("past query tile {i} (rows {a}–{b})", values)
      : _("past key tile {i} (rows {a}–{b})", values);
  }
  return axis === "query"
    ? _("past query tiles {i}–{j} (rows {a}–{b})", values)
    : _("past key tiles {i}–{j} (rows {a}–{b})", values);
}

/** Tiles in one mark of an axis. */
export function tileCount(walk, axis, mark) {
  const [, , t0, t1] = (axis === "query" ? walk.r.query_marks : walk.r.key_marks)[mark];
  return t1 - t0;
}

/** The axes of a pass: its outer tiles (held on the bench) and the tiles that stream past. */
export function passAxes(spec) {
  return spec.walk === "query_tiles" ? ["query", "key"] : ["key", "query"];
}

function movesSentence(step, order) {
  const values = { reads: movesText(step.readBytes, order), writes: movesText(step.writeBytes, order) };
  if (values.reads && values.writes) {
    return _("From global memory it reads {reads}; to global memory it writes {writes}.", values);
  }
  if (values.reads) return _("It reads {reads} from global memory.", values);
  if (values.writes) return _("It writes {writes} to global memory.", values);
  return _("It moves no bytes to or from global memory.");
}

function whatSentence(walk, step) {
  const head = { k: fmt(step.k + 1), steps: fmt(walk.steps), pass: step.passName };
  if (step.phase === "once") {
    return _("Step {k} of {steps}, pass {pass}: one pass over the whole head, every row once.", head);
  }
  const [outerAxis, innerAxis] = passAxes(step.spec);
  const outer = tilesText(walk, outerAxis, step.outer);
  const held = tileCount(walk, outerAxis, step.outer);
  if (step.phase === "load") {
    return ngettext(
      "Step {k} of {steps}, pass {pass}: {tiles} comes onto the bench (workgroup memory).",
      "Step {k} of {steps}, pass {pass}: {tiles} come onto the bench (workgroup memory), side by side.",
      held,
      { ...head, tiles: outer },
    );
  }
  if (step.phase === "store") {
    return ngettext(
      "Step {k} of {steps}, pass {pass}: {tiles} leaves the bench.",
      "Step {k} of {steps}, pass {pass}: {tiles} leave the bench.",
      held,
      { ...head, tiles: outer },
    );
  }
  const inner = tilesText(walk, innerAxis, step.inner);
  return ngettext(
    "Step {k} of {steps}, pass {pass}: {inner} walks {past} on the bench.",
    "Step {k} of {steps}, pass {pass}: {inner} walk {past} on the bench.",
    tileCount(walk, innerAxis, step.inner),
    { ...head, inner, past: pastText(walk, outerAxis, step.outer) },
  );
}

/** What the N×N tables do in this step: a tile goes out to global memory, or comes back. */
function tableSentences(walk, step) {
  const out = [];
  for (const [kind, said] of [
    ["writes", (tensor) => _("A tile of the N×N table {tensor} goes out to global memory.", { tensor })],
    ["reads", (tensor) => _("A tile of the N×N table {tensor} comes back from global memory.", { tensor })],
  ]) {
    for (const tensor of Object.keys(step[kind])) if (step.spec[kind][tensor] === "table") out.push(said(tensor));
  }
  if (step.phase === "stream" && !walk.hasTables) {
    out.push(_("The scores of these tiles stay on the bench: no N×N table goes to global memory."));
  }
  return out;
}

function skipSentence(walk, step) {
  if (step.phase !== "stream" || !walk.r.causal) return "";
  const { skipped, total } = walk.skippedPairs(step.pass, step.outer);
  if (!skipped) return "";
  const values = { skipped: fmt(skipped), n: fmt(total) };
  return step.walk === "query_tiles"
    ? ngettext(
        "Under the causal mask, {skipped} of this row's {n} tile pair lies past the diagonal and is skipped.",
        "Under the causal mask, {skipped} of this row's {n} tile pairs lie past the diagonal and are skipped.",
        total,
        values,
      )
    : ngettext(
        "Under the causal mask, {skipped} of this column's {n} tile pair lies above the diagonal and is skipped.",
        "Under the causal mask, {skipped} of this column's {n} tile pairs lie above the diagonal and are skipped.",
        total,
        values,
      );
}

/** The tally in one sentence after `done` steps. */
export function tallySentence(walk, done, tally) {
  if (done >= walk.steps) {
    return _("The walk is done: {total} bytes moved, the figure Count gives.", { total: fmt(walk.totalBytes) });
  }
  return _("Tally so far: {bytes} of {total} bytes.", { bytes: fmt(tally.total), total: fmt(walk.totalBytes) });
}

/** Everything the position says: the step just taken (or the start), its bytes, and the tally. */
export function nowText(walk, done, tally, order) {
  if (done === 0) {
    const before = _("Before the walk: nothing has moved yet. Press Step or Play.");
    return [before, tallySentence(walk, 0, tally)].join(" ");
  }
  const step = walk.step(done - 1);
  const bytes = walk.bytes;
  const scale = (moved) => Object.fromEntries(Object.entries(moved).map(([t, e]) => [t, e * bytes]));
  const shown = { ...step, readBytes: scale(step.reads), writeBytes: scale(step.writes) };
  return [
    whatSentence(walk, shown),
    movesSentence(shown, order),
    ...tableSentences(walk, shown),
    skipSentence(walk, shown),
    tallySentence(walk, done, tally),
  ]
    .filter(Boolean)
    .join(" ");
}

/** The sizes and tiles of the walk, and how many tiles each square stands for. */
export function setupText(walk, label) {
  const r = walk.r;
  const values = {
    kernel: label,
    n: fmt(r.n),
    d: String(r.d),
    m: fmt(r.workgroup_bytes),
    qt: fmt(r.query_tiles),
    br: fmt(r.block_rows),
    kt: fmt(r.key_tiles),
    bc: fmt(r.block_cols),
    steps: fmt(walk.steps),
  };
  return r.causal
    ? _(
        "{kernel}, N = {n}, d = {d}, causal, M = {m} B. Query tiles: {qt} of B_r = {br} rows. Key tiles: {kt} of B_c = {bc} rows. Steps: {steps}.",
        values,
      )
    : _(
        "{kernel}, N = {n}, d = {d}, M = {m} B. Query tiles: {qt} of B_r = {br} rows. Key tiles: {kt} of B_c = {bc} rows. Steps: {steps}.",
        values,
      );
}

/** How many tiles each square of the grid stands for. */
export function groupText(walk) {
  const { query_tiles: gq, key_tiles: gk } = walk.r.group;
  if (gq === 1 && gk === 1) {
    return _("Each square of the grid is one query tile (its row) against one key tile (its column).");
  }
  // (each phrase in its own call: the extractor does not look inside another call's arguments)
  const queries = ngettext("{n} query tile", "{n} query tiles", gq, { n: fmt(gq) });
  const keys = ngettext("{n} key tile", "{n} key tiles", gk, { n: fmt(gk) });
  return _(
    "Too many tiles to draw one by one: each square stands for {queries} × {keys}, walking side by side, as a GPU runs many workgroups at once.",
    { queries, keys },
  );
}

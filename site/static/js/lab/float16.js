// The float16 card: the two float16 fused kernels (with the max subtraction
// and without it) on the model's held-out sentences, on this GPU where WebGPU offers
// shader-f16, and always through their CPU mirror in Python (emulator/float16_mirrors.py), which
// also holds the GPU's rows to its own. main.js imports this module on the first press of
// the card's button, and only then is facts/held_out_f16.json fetched.
import { _, ngettext } from "../i18n.js";
import { client } from "./client.js";
import { fixed, fmt } from "./format.js";
import { fillHtml, html, setHtml } from "./html.js";
import { gpu } from "./time.js";

const $ = (id) => document.getElementById(id);
const card = $("f16-card");
const statusBox = $("f16-status");
const alertBox = $("f16-alert");
const button = $("f16-button");
const MAX_LISTED = 12; // lost rows named one by one; a head that loses more is summed up

/** base64 of little-endian float16 -> their bit patterns. */
function bits(text) {
  const raw = atob(text);
  const out = new Uint16Array(raw.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = raw.charCodeAt(2 * i) | (raw.charCodeAt(2 * i + 1) << 8);
  return out;
}

async function loadData() {
  const res = await fetch(card.dataset.src);
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return res.json();
}

/** What this browser's GPU can do here: {state: "none" | "no-f16" | "ok", adapter, message, g}. */
async function gpuState() {
  let g;
  try {
    g = await gpu();
  } catch (err) {
    return { state: "none", message: err.message };
  }
  const probe = await g.probeGpu();
  if (!probe.ok) return { state: "none", message: probe.reason };
  const info = probe.adapterInfo || {};
  const adapter = [info.vendor, info.architecture, info.device].filter(Boolean).join(", ") || _("not reported");
  return { state: probe.features.f16 ? "ok" : "no-f16", adapter, software: probe.software, g, probe };
}

/** Python's plans of the float16 kernels (planner/__init__.py, "float16_plan" op), one per sentence length. */
async function planOnGpu(gs, data) {
  const reply = await client.request(
    "float16_plan",
    {},
    {
      lengths: data.lengths,
      d: data.d,
      heads: data.heads.length,
      limits: gs.probe.limits,
      subgroup_min_size: gs.g.subgroupMinOf(gs.probe),
    },
  );
  if (!reply.ok) throw new Error(reply.errors.map((e) => e.message).join(" "));
  return reply.result.by_length;
}

/** Every float16 kernel on every sentence, the shipped heads side by side, as `plans` (by N) say: per head {kernel: [bits per sentence]}. */
async function runOnGpu(g, data, kernels, plans) {
  const d = data.d;
  const heads = data.heads.length;
  const mats = data.heads.map((h) => ({ Q: bits(h.Q), K: bits(h.K), V: bits(h.V) }));
  const out = data.heads.map(() => Object.fromEntries(kernels.map((k) => [k, []])));
  for (const [s, n] of data.lengths.entries()) {
    const off = data.offsets[s];
    const pack = (name) => {
      const a = new Uint16Array(heads * n * d);
      mats.forEach((m, h) => a.set(m[name].subarray(off * d, (off + n) * d), h * n * d));
      return a;
    };
    const [Q, K, V] = ["Q", "K", "V"].map(pack);
    statusBox.textContent = _("On your GPU in float16: sentence {s} of {k}…", {
      s: String(s + 1),
      k: String(data.lengths.length),
    });
    for (const kernel of kernels) {
      const r = await g.runFloat16({ plan: plans[String(n)], kernel, Q, K, V });
      for (let h = 0; h < heads; h++) out[h][kernel].push(Array.from(r.O.subarray(h * n * d, (h + 1) * n * d)));
    }
  }
  return out;
}

function gpuNote(gs) {
  if (gs.state === "ok")
    return _("Ran on your GPU ({adapter}) and on the CPU mirror; the table holds the two side by side.", {
      adapter: gs.adapter,
    });
  if (gs.state === "no-f16")
    return _(
      "Not on this GPU: WebGPU offers your GPU ({adapter}) no 16-bit floats (the shader-f16 feature), so the float16 kernels could not run on it. Below is the CPU mirror's result, which rounds every step to float16 as the kernels do.",
      { adapter: gs.adapter },
    );
  if (gs.state === "failed")
    return _("The float16 kernels did not run on your GPU ({error}). Below is the CPU mirror's result.", {
      error: gs.message,
    });
  return _("No WebGPU here ({reason}), so the float16 kernels ran only on the CPU mirror, below.", {
    reason: gs.message,
  });
}

/** One head's sentences as rows of token marks: filled where the row is lost. */
function strip(data, lost) {
  const gone = new Set(lost);
  const lines = data.lengths.map((n, s) => {
    const marks = [];
    for (let i = 0; i < n; i++) marks.push(html`<span class="${gone.has(data.offsets[s] + i) ? "lost" : ""}"></span>`);
    return html`<span class="f16-line">${marks}</span>`;
  });
  return html`<div class="f16-strip" aria-hidden="true">${lines}</div>`;
}

const SPECIAL = new Set(["[CLS]", "[SEP]", "[PAD]"]);
const CLOSE_UP = /^[,.;:!?')]/; // no space before these

/** The held-out sentence (the model's input, in English) with the lost row's token marked:
 *  WordPiece pieces ("wa", "##gg", "##ling") joined into their word, [CLS]/[SEP] shown
 *  only when the lost row is one of them. */
function sentenceWith(tokens, lost) {
  const parts = [];
  tokens.forEach((t, i) => {
    if (SPECIAL.has(t) && i !== lost) return;
    const piece = t.startsWith("##") ? t.slice(2) : t;
    const glued = parts.length === 0 || t.startsWith("##") || CLOSE_UP.test(t) || tokens[i - 1] === "'";
    if (!glued) parts.push(" ");
    parts.push(i === lost ? html`<mark>${piece}</mark>` : piece);
  });
  return html`<q class="f16-sentence" lang="en">${parts}</q>`;
}

function lostList(rep, broken, data) {
  const lost = rep.kernels[broken].lost;
  const w = {
    every: _("Every row: each has a score past the edge."),
    none: _("No row."),
  };
  if (!lost.length) return html`<p class="f16-rows">${w.none}</p>`;
  if (lost.length === rep.rows && rep.rows_detail.every((r) => r.cause === "score"))
    return html`<p class="f16-rows">${w.every}</p>`;
  const items = rep.rows_detail.slice(0, MAX_LISTED).map((r) => {
    const values = {
      token: r.text,
      s: String(r.sentence + 1),
      row: String(r.token + 1),
      score: fixed(r.largest_score, 2),
    };
    const line =
      r.cause === "score"
        ? _("“{token}” (sentence {s}, token {row}): its largest score, {score}, passes the edge.", values)
        : _(
            "“{token}” (sentence {s}, token {row}): its largest score, {score}, stays below the edge, but its running total l passes it.",
            values,
          );
    const said = data.tokens && data.tokens[r.sentence] ? sentenceWith(data.tokens[r.sentence], r.token) : "";
    return html`<li>${line} ${said}</li>`;
  });
  const rest = _("and {n} more", { n: fmt(lost.length - MAX_LISTED) });
  const more = lost.length > MAX_LISTED ? html`<li>${rest}</li>` : "";
  return html`<ul class="f16-rows">${items}${more}</ul>`;
}

function gpuCell(k) {
  if (!k.gpu) return "–";
  return fmt(k.gpu.lost.length);
}

function render(reports, gs, labels, data) {
  const first = reports[0];
  const names = Object.keys(first.kernels);
  const broken = names.find((n) => !first.kernels[n].subtracts_max);
  const right = names.find((n) => first.kernels[n].subtracts_max);
  const ran = Boolean(first.kernels[broken].gpu);
  const total = (fn) => reports.reduce((a, r) => a + fn(r), 0);
  const rows = total((r) => r.rows);
  const lost = (name) => total((r) => r.kernels[name].lost.length);
  const lostGpu = (name) => total((r) => (r.kernels[name].gpu ? r.kernels[name].gpu.lost.length : 0));
  const agree = ran && reports.every((r) => names.every((n) => r.kernels[n].gpu.agree));
  const identical = total((r) =>
    names.reduce((a, n) => a + (r.kernels[n].gpu ? r.kernels[n].gpu.identical_rows : 0), 0),
  );
  const over = total((r) => r.overflowing_scores);
  const film = JSON.parse(card.dataset.filmCounts);
  const bySum = reports.reduce((a, r) => a + r.rows_detail.filter((x) => x.cause === "sum").length, 0);
  const w = {
    caption: _("Rows lost to inf or NaN, per head ({rows} rows each)", { rows: fmt(first.rows) }),
    head: _("Layer, head"),
    largest: _("Largest score"),
    past: _("Scores past the edge"),
    brokenCpu: _("Without the subtraction: CPU mirror"),
    brokenGpu: _("Without the subtraction: your GPU"),
    rightCpu: _("With it: CPU mirror"),
    rightGpu: _("With it: your GPU"),
    all: _("All"),
    kernels: _("Without the subtraction: “{broken}”. With it: “{right}”.", {
      broken: labels[broken] || broken,
      right: labels[right] || right,
    }),
    headline:
      lost(right) === 0
        ? _("Without the max subtraction, {lost} of {rows} rows come out as inf or NaN. With it, none do.")
        : _("Without the max subtraction, {lost} of {rows} rows come out as inf or NaN; with it, {kept} do."),
    bytes: _(
      "Count: over these sentences each kernel moves {bytes} bytes a head in float16, 2 bytes an element: half of the {bytes32} bytes the float32 fused kernel moves at the same tiles.",
      { bytes: fmt(first.kernels[right].bytes), bytes32: fmt(first.kernels[right].bytes_float32) },
    ),
    film:
      over === film.overflowing
        ? _(
            "The film counts {film} held-out scores past the edge, of {scores} in all the model's heads; all of them lie in these heads.",
            { film: fmt(film.overflowing), scores: fmt(film.scores) },
          )
        : _(
            "The film counts {film} held-out scores past the edge, of {scores} in all the model's heads, all in these heads; rounded to float16 as this kernel forms them, {here} are. A score within a float16 step of the edge can round to either side of it.",
            { film: fmt(film.overflowing), scores: fmt(film.scores), here: fmt(over) },
          ),
    sum: ngettext(
      "{n} row has no score past the edge and is lost all the same: its running total l, a sum of large terms, passes it.",
      "{n} rows have no score past the edge and are lost all the same: their running total l, a sum of large terms, passes it.",
      bySum,
      { n: fmt(bySum) },
    ),
    agree: agree
      ? _(
          "Your GPU lost the same rows as the CPU mirror, row for row; {identical} of {runs} rows are identical to the last bit.",
          { identical: fmt(identical), runs: fmt(rows * names.length) },
        )
      : _(
          "Your GPU and the CPU mirror disagree on some rows (see the table). WGSL lets a GPU assume that no number overflows, so what an overflowing row holds is up to the GPU; the mirror follows IEEE float16.",
        ),
  };
  const name = (r) => _("layer {layer}, head {head}", { layer: String(r.layer), head: String(r.head) });
  const line = (r) => {
    const k = r.kernels;
    return html`<tr><th scope="row">${name(r)}</th>
      <td data-label="${w.largest}">${fixed(r.largest_score, 2)}</td>
      <td data-label="${w.past}">${fmt(r.overflowing_scores)}</td>
      <td data-label="${w.brokenCpu}">${fmt(k[broken].lost.length)}</td>
      ${ran ? html`<td data-label="${w.brokenGpu}">${gpuCell(k[broken])}</td>` : ""}
      <td data-label="${w.rightCpu}">${fmt(k[right].lost.length)}</td>
      ${ran ? html`<td data-label="${w.rightGpu}">${gpuCell(k[right])}</td>` : ""}</tr>`;
  };
  const heads = reports.map(
    (r) =>
      html`<figure class="f16-head"><figcaption>${name(r)}</figcaption>${strip(data, r.kernels[broken].lost)}${lostList(r, broken, data)}</figure>`,
  );
  const done = _("The CPU mirror has done {i} of {k} heads…", { i: String(reports.length), k: String(first.heads) });
  const pending = reports.length < first.heads ? html`<p class="note">${done}</p>` : "";
  const which = _("Which rows the kernel without the subtraction loses");
  const marks = _("One line per sentence, one mark per token's row; a filled mark is a lost row.");
  setHtml(
    $("f16-body"),
    html`<p class="f16-gpu-note" id="f16-gpu-note" data-state="${gs.state}">${gpuNote(gs)}</p>
    <p class="check-headline" id="f16-headline">${fillHtml(w.headline, {
      lost: html`<strong id="f16-lost">${fmt(lost(broken))}</strong>`,
      rows: fmt(rows),
      kept: html`<strong id="f16-lost-right">${fmt(lost(right))}</strong>`,
    })}</p>
    <p class="note">${w.kernels}</p>
    <div class="table-scroll"><table class="numbers stack" id="f16-table"><caption>${w.caption}</caption>
      <thead><tr><th scope="col">${w.head}</th><th scope="col">${w.largest}</th><th scope="col">${w.past}</th>
        <th scope="col">${w.brokenCpu}</th>${ran ? html`<th scope="col">${w.brokenGpu}</th>` : ""}
        <th scope="col">${w.rightCpu}</th>${ran ? html`<th scope="col">${w.rightGpu}</th>` : ""}</tr></thead>
      <tbody>${reports.map(line)}</tbody>
      <tfoot><tr><th scope="row">${w.all}</th><td data-label="${w.largest}">–</td><td data-label="${w.past}" id="f16-over">${fmt(over)}</td>
        <td data-label="${w.brokenCpu}" id="f16-cpu-broken">${fmt(lost(broken))}</td>
        ${ran ? html`<td data-label="${w.brokenGpu}" id="f16-gpu-broken">${fmt(lostGpu(broken))}</td>` : ""}
        <td data-label="${w.rightCpu}" id="f16-cpu-right">${fmt(lost(right))}</td>
        ${ran ? html`<td data-label="${w.rightGpu}" id="f16-gpu-right">${fmt(lostGpu(right))}</td>` : ""}</tr></tfoot>
    </table></div>
    ${pending}
    ${ran && reports.length === first.heads ? html`<p id="f16-agree">${w.agree}</p>` : ""}
    <p>${w.film}</p>
    ${bySum ? html`<p>${w.sum}</p>` : ""}
    <p>${w.bytes}</p>
    <h4>${which}</h4>
    <p class="note">${marks}</p>
    <div class="f16-heads">${heads}</div>`,
  );
}

/** The card's button: load the data, run on the GPU where it can, then the mirror, head by head. */
export async function runFloat16Card() {
  if (button.disabled) return;
  button.disabled = true;
  alertBox.textContent = "";
  try {
    statusBox.textContent = _("Loading the held-out sentences (Q, K and V in float16)…");
    let data;
    try {
      data = await loadData();
    } catch (err) {
      statusBox.textContent = "";
      alertBox.textContent = _("Could not load the held-out sentences: {error}", { error: err.message });
      return;
    }
    const labels = JSON.parse(card.dataset.labels);
    const kernels = Object.keys(labels);
    statusBox.textContent = _("Looking for a WebGPU adapter with 16-bit floats…");
    const gs = await gpuState();
    let outputs = null;
    if (gs.state === "ok") {
      try {
        statusBox.textContent = client.ready
          ? _("Planning the float16 kernels for your GPU…")
          : _("Starting Python, then planning the float16 kernels for your GPU…");
        outputs = await runOnGpu(gs.g, data, kernels, await planOnGpu(gs, data));
      } catch (err) {
        gs.state = "failed";
        gs.message = err.message || String(err);
      }
    }
    const reports = [];
    for (let i = 0; i < data.heads.length; i++) {
      statusBox.textContent = client.ready
        ? _("The CPU mirror in float16: head {i} of {k}…", { i: String(i + 1), k: String(data.heads.length) })
        : _("Starting Python, then the CPU mirror in float16…");
      const reply = await client.request("float16", {}, { head: i, data, outputs: outputs ? outputs[i] : null });
      if (!reply.ok) {
        statusBox.textContent = "";
        alertBox.textContent = reply.errors.map((e) => e.message).join(" ");
        return;
      }
      reports.push(reply.result);
      render(reports, gs, labels, data);
    }
    statusBox.textContent = _("float16: done, {heads} heads.", { heads: String(reports.length) });
  } catch (err) {
    // Whatever went wrong, say it; the results already shown stay.
    statusBox.textContent = "";
    alertBox.textContent = _("The float16 card stopped: {error}", { error: err.message || String(err) });
  } finally {
    button.disabled = false;
  }
}

// The lab's input rules that need no Python: the same checks, in the same order and
// words, as emulator/tiling.py parse_request, so a plainly bad N, d, M or seed gets
// its message at once, before Pyodide has started. Python stays the judge: the page
// sends every request that passes here to it, and tests/test_js_parity.py runs one
// case table (tests/lab_rule_cases.json) through both.
//
// Pure: no DOM, so node runs it. `rules` is {head_dims, lesson} from
// kernels_wgsl/manifest.json and {tiling} from the planner (planner/__init__.py cold_rules,
// in the page's language): the page reads both from the form's data-rules attribute,
// which build.py writes. The tiling rule itself is Python's alone: this file only looks
// its refusals up.
import { _, fill, num } from "../i18n.js";
import { parseNumber } from "../parse-number.js";

const fmt = (x) => num(x, 0);

// The learner's text for a message: control and format marks removed, trimmed, at most
// 20 characters (emulator/parse_number.py _shown; parse-number.js does the same).
function shown(text) {
  const kept = Array.from(text)
    .filter((ch) => !/[\p{Cc}\p{Cf}]/u.test(ch))
    .join("")
    .trim();
  const chars = Array.from(kept);
  return chars.length <= 20 ? kept : chars.slice(0, 19).join("") + "…";
}

// "a, b or c" in the page's language (tiling.py _either writes the same).
const either = (words) =>
  words.length > 1
    ? _("{first} or {last}", { first: words.slice(0, -1).join(", "), last: words[words.length - 1] })
    : words[0];

/**
 * A yes/no value as links, forms and the CLI write it, in one vocabulary: the
 * manifest's lesson.true_words and lesson.false_words, which emulator/tiling.py
 * parse_bool reads too. Returns {ok: true, value} or {ok: false, message} in
 * parse_bool's words.
 */
export function readBoolean(raw, rules, label = _("Causal")) {
  if (raw === null || raw === undefined || typeof raw === "boolean") return { ok: true, value: Boolean(raw) };
  if (raw === 0 || raw === 1) return { ok: true, value: raw === 1 };
  const { true_words: yes, false_words: no } = rules.lesson;
  const text = typeof raw === "string" ? raw.trim().toLowerCase() : null;
  if (yes.includes(text)) return { ok: true, value: true };
  if (no.includes(text)) return { ok: true, value: false };
  return {
    ok: false,
    message: _("{label} takes {yes} to turn it on and {no} to turn it off; “{text}” is neither.", {
      label,
      yes: either(yes),
      no: either(no),
      text: shown(String(raw)),
    }),
  };
}

function integer(raw, label) {
  const parsed = parseNumber(raw ?? "", { integer: true, label });
  return parsed.ok ? { value: parsed.value } : { error: parsed.message };
}

/**
 * Errors [{field, message}] that Python's parse_request would give for these raw
 * form values, as far as they need no Python; [] when none is found here (Python
 * still decides). purpose: "count" or "check".
 */
export function quickErrors(params, purpose, rules) {
  const L = rules.lesson;
  const errors = [];
  const out = {};
  const limit = purpose === "check" ? L.check_max_n : L.count_max_n;

  const n = integer(params.n, _("Sequence length N"));
  if (n.error) errors.push({ field: "n", message: n.error });
  else if (n.value < 1) {
    errors.push({
      field: "n",
      message: _("Sequence length N must be at least 1; {n} has no rows to attend to.", { n: fmt(n.value) }),
    });
  } else if (n.value > limit) {
    errors.push({
      field: "n",
      message:
        purpose === "check"
          ? _(
              "Check runs every kernel step in Python, so it stops at N = {limit}; N = {n} would take too long. Count works up to N = {count_max}.",
              { limit: fmt(limit), n: fmt(n.value), count_max: fmt(L.count_max_n) },
            )
          : _("Sequence length N must be at most {limit}; {n} is too large to count here.", {
              limit: fmt(limit),
              n: fmt(n.value),
            }),
    });
  }

  const d = integer(params.d, _("Head dimension d"));
  if (d.error) errors.push({ field: "d", message: d.error });
  else if (!rules.head_dims.includes(d.value)) {
    errors.push({
      field: "d",
      message: _("Head dimension d must be one of {dims}; {d} is not.", {
        dims: rules.head_dims.join(", "),
        d: String(d.value),
      }),
    });
  } else out.d = d.value;

  const m = integer(params.workgroup_bytes ?? L.workgroup_bytes_default, _("Workgroup memory M"));
  if (m.error) errors.push({ field: "workgroup_bytes", message: m.error });
  else if (m.value < L.workgroup_bytes_min || m.value > L.workgroup_bytes_max) {
    errors.push({
      field: "workgroup_bytes",
      message: _("Workgroup memory M must be from {low} to {high} bytes; {m} is outside.", {
        low: fmt(L.workgroup_bytes_min),
        high: fmt(L.workgroup_bytes_max),
        m: fmt(m.value),
      }),
    });
  } else out.m = m.value;

  if ("causal" in params) {
    const c = readBoolean(params.causal, rules);
    if (!c.ok) errors.push({ field: "causal", message: c.message });
  }

  const seed = integer(params.seed ?? 0, _("Seed"));
  if (seed.error) errors.push({ field: "seed", message: seed.error });
  else if (seed.value < 0 || seed.value > L.seed_max) {
    errors.push({
      field: "seed",
      message: _("Seed must be a whole number from 0 to {high}; {seed} is outside.", {
        high: fmt(L.seed_max),
        seed: fmt(seed.value),
      }),
    });
  }

  // The tiling's refusals, from the planner's table: below the smallest M that tiles
  // at this d, Python's own message, with M and ⌊M/2⌋ written this page's way.
  const group = errors.length ? null : (rules.tiling || []).find((g) => g.kernels.includes(params.kernel));
  const refusal = group && group.by_d[String(out.d)];
  if (refusal && out.m < refusal.smallest_m) {
    errors.push({
      field: "workgroup_bytes",
      message: fill(refusal.message, { m: fmt(out.m), half: fmt(Math.floor(out.m / 2)) }),
    });
  }
  return errors;
}

// HTML built from template literals that escapes by default: html`<td>${name}</td>`
// escapes `name`; a value that is already markup must come from html`` itself or be
// passed through raw() (for markup this code wrote, never for text from elsewhere).

class Markup {
  constructor(text) {
    this.text = text;
  }
  toString() {
    return this.text;
  }
}

/** Text made safe to place in HTML content or a quoted attribute. */
export function escapeHtml(text) {
  return String(text).replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c],
  );
}

/** Mark a string this code wrote as markup (no escaping). */
export function raw(text) {
  return new Markup(String(text));
}

function piece(value) {
  if (value instanceof Markup) return value.text;
  if (Array.isArray(value)) return value.map(piece).join("");
  if (value === null || value === undefined || value === false) return "";
  return escapeHtml(value);
}

/** Tagged template: every interpolated value is escaped unless it is markup. */
export function html(strings, ...values) {
  let out = strings[0];
  values.forEach((v, i) => {
    out += piece(v) + strings[i + 1];
  });
  return new Markup(out);
}

/** Replace an element's content with markup from html``. */
export function setHtml(element, markup) {
  element.innerHTML = piece(markup);
}

/**
 * A translated sentence with markup in it: `text` comes from _() called without
 * params (its {name} placeholders left in place); each placeholder becomes
 * params[name], escaped unless it is markup from html``, and the rest of the
 * sentence is escaped. fillHtml(_("Plain moves {plain} bytes."), { plain: html`<strong>1</strong>` }).
 */
export function fillHtml(text, params) {
  const out = String(text)
    .split(/(\{\w+\})/)
    .map((part) => {
      const m = /^\{(\w+)\}$/.exec(part);
      return m && m[1] in params ? piece(params[m[1]]) : escapeHtml(part);
    })
    .join("");
  return new Markup(out);
}

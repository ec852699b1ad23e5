// The code editor: CodeMirror 6 (bundled from npm by build.py into
// vendor/codemirror/), mounted in a shadow root. There CodeMirror adds its
// styles as constructable stylesheets (adoptedStyleSheets), which the page's
// CSP (style-src 'self', no 'unsafe-inline') allows, where <style> elements
// would be refused. Colours come from the page's CSS custom properties,
// which inherit into the shadow root.
// Keyboard: Tab indents; Escape then Tab moves focus out (CodeMirror's
// tab-focus mode), so the editor never traps the keyboard.
import {
  EditorView,
  basicSetup,
  EditorState,
  keymap,
  indentWithTab,
  python,
  wgsl,
  HighlightStyle,
  syntaxHighlighting,
  tags,
} from "../../../vendor/codemirror/codemirror.js";
import * as progress from "./progress.js";

const theme = EditorView.theme({
  "&": {
    color: "var(--ink)",
    backgroundColor: "var(--bg-raised)",
    fontSize: "0.95rem",
    border: "1px solid var(--rule)",
    borderRadius: "4px",
  },
  "&.cm-focused": { outline: "3px solid var(--focus)", outlineOffset: "2px" },
  ".cm-scroller": { fontFamily: "var(--mono)", lineHeight: "1.5", minHeight: "12rem", maxHeight: "32rem" },
  ".cm-content": { caretColor: "var(--ink)" },
  ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--ink)" },
  ".cm-gutters": { backgroundColor: "var(--bg)", color: "var(--ink-soft)", borderRight: "1px solid var(--rule)" },
  ".cm-activeLine": { backgroundColor: "color-mix(in srgb, var(--accent) 8%, transparent)" },
  ".cm-activeLineGutter": {
    backgroundColor: "color-mix(in srgb, var(--accent) 14%, transparent)",
    color: "var(--ink)",
  },
  "&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection": {
    backgroundColor: "color-mix(in srgb, var(--accent) 30%, transparent)",
  },
  ".cm-tooltip": { backgroundColor: "var(--bg-raised)", color: "var(--ink)", border: "1px solid var(--rule)" },
});

// Token colours from the site's palette (each meets 4.5:1 on the background).
const highlight = HighlightStyle.define([
  {
    tag: [tags.keyword, tags.controlKeyword, tags.definitionKeyword, tags.operatorKeyword],
    color: "var(--c-p)",
    fontWeight: "600",
  },
  { tag: [tags.string, tags.special(tags.string)], color: "var(--c-v)" },
  { tag: [tags.number, tags.bool, tags.null], color: "var(--c-s)" },
  { tag: [tags.comment, tags.lineComment], color: "var(--ink-soft)", fontStyle: "italic" },
  { tag: [tags.function(tags.variableName), tags.function(tags.definition(tags.variableName))], color: "var(--c-q)" },
  { tag: [tags.className, tags.definition(tags.className)], color: "var(--c-k)" },
]);

/**
 * Mount an editor in `host` (inside a new shadow root).
 * options: {doc: string, label: string (accessible name), onChange(text),
 * language: "python" (default) or "wgsl"}.
 * Returns {get value(), set value(text), focus(), view}.
 */
export function createEditor(host, { doc, label, onChange, language = "python" }) {
  const shadow = host.attachShadow({ mode: "open" });
  const mount = document.createElement("div");
  shadow.appendChild(mount);
  const view = new EditorView({
    root: shadow,
    parent: mount,
    state: EditorState.create({
      doc,
      extensions: [
        basicSetup,
        language === "wgsl" ? wgsl() : python(),
        keymap.of([indentWithTab]),
        theme,
        syntaxHighlighting(highlight),
        // tabindex: axe counts a contenteditable as focusable content only with it (a scrolling editor)
        EditorView.contentAttributes.of({ "aria-label": label, "aria-multiline": "true", tabindex: "0" }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged && onChange) onChange(u.state.doc.toString());
        }),
      ],
    }),
  });
  return {
    view,
    get value() {
      return view.state.doc.toString();
    },
    set value(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    focus() {
      view.focus();
    },
  };
}

/**
 * The editor of one exercise step's section: the code its progress record
 * holds (else the step's starter code), saved again 300 ms after each edit,
 * except while paused() (a restore from progress is not a learner's edit).
 * Also sets host.editor. Returns {editor, flush(), starter}: flush() saves now.
 */
export function createStepEditor(section, { language = "python", paused = () => false } = {}) {
  const key = section.dataset.key;
  const host = section.querySelector(".editor-host");
  const starter = section.querySelector(".starter-code").textContent;
  const saved = (progress.load().steps[key] || {}).code;
  let timer = null;
  const save = (text) =>
    progress.update(key, (s) => {
      s.code = text;
    });
  const editor = createEditor(host, {
    doc: saved !== undefined ? saved : starter,
    label: host.dataset.label,
    language,
    onChange: (text) => {
      if (paused()) return;
      clearTimeout(timer);
      timer = setTimeout(() => save(text), 300);
    },
  });
  host.editor = editor;
  const flush = () => {
    clearTimeout(timer);
    save(editor.value);
  };
  return { editor, flush, starter };
}

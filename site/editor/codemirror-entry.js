// The entry esbuild bundles (build.py, bundle_editor) into vendor/codemirror/codemirror.js:
// CodeMirror 6 and its Python mode, pinned in package.json, served from our own origin.
export { EditorView, basicSetup } from "codemirror";
export { EditorState } from "@codemirror/state";
export { keymap } from "@codemirror/view";
export { indentWithTab } from "@codemirror/commands";
export { python } from "@codemirror/lang-python";
export { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
export { tags } from "@lezer/highlight";

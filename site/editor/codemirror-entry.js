// The entry esbuild bundles (build.py, bundle_editor) into vendor/codemirror/codemirror.js:
// CodeMirror 6, its Python mode and a Lezer WGSL mode (exercise 4), pinned in package.json, served from our own origin.
export { EditorView, basicSetup } from "codemirror";
export { EditorState } from "@codemirror/state";
export { keymap } from "@codemirror/view";
export { indentWithTab } from "@codemirror/commands";
export { python } from "@codemirror/lang-python";
export { wgsl } from "@iizukak/codemirror-lang-wgsl";
export { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
export { tags } from "@lezer/highlight";

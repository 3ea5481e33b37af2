// CodeMirror 6 for the memory panel's Markdown editors (loaded only when the panel opens).
export { EditorView, basicSetup, minimalSetup } from "codemirror";
export { EditorState } from "@codemirror/state";
export { keymap } from "@codemirror/view";
export { markdown } from "@codemirror/lang-markdown";

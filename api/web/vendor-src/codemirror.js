// CodeMirror 6 for the memory panel's Markdown editors (loaded only when the panel opens).
// The pieces of a small editor rather than `basicSetup`, and the Markdown language without
// `markdown()`, which pulls in the HTML, CSS and JavaScript languages for embedded blocks:
// 110 KB gzipped instead of 208.
export {
  EditorView,
  keymap,
  lineNumbers,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  drawSelection,
} from "@codemirror/view";
export { EditorState } from "@codemirror/state";
export { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
export { syntaxHighlighting, defaultHighlightStyle, indentOnInput } from "@codemirror/language";
export { markdownLanguage } from "@codemirror/lang-markdown";

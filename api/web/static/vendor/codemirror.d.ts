// Types of static/vendor/codemirror.js, which vendor.sh bundles from vendor-src/codemirror.js: the packages'
// own types, re-exported as that entry does. tsc reads this file instead of the minified bundle.
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

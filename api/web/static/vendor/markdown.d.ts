// Types of static/vendor/markdown.js, which vendor.sh bundles from vendor-src/markdown.js: the packages'
// own types, re-exported as that entry does. tsc reads this file instead of the minified bundle.
export { Marked, marked } from "marked";
export { default as DOMPurify } from "dompurify";

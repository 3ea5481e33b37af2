// Types of static/vendor/highlight.js, which vendor.sh bundles from vendor-src/highlight.js: the packages'
// own types, re-exported as that entry does. tsc reads this file instead of the minified bundle.
export { default } from "highlight.js/lib/core";

// Types of static/vendor/preact.js, which vendor.sh bundles from vendor-src/preact.js: the packages'
// own types, re-exported as that entry does. tsc reads this file instead of the minified bundle.
import type { VNode } from "preact";

export * from "preact";
export * from "preact/hooks";
export { batch, computed, effect, signal, untracked, useComputed, useSignal, useSignalEffect } from "@preact/signals";
export { default as htm } from "htm";
/** htm bound to Preact's `h`. */
export declare const html: (strings: TemplateStringsArray, ...values: unknown[]) => VNode;

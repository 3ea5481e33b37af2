// Preact, its hooks and htm as one module: `html` is htm bound to Preact's `h`.
import { h } from "preact";
import htm from "htm";

export * from "preact";
export * from "preact/hooks";
export { htm };
export const html = htm.bind(h);

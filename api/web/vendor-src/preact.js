// Preact, its hooks, signals and htm as one module: `html` is htm bound to Preact's `h`.
// Signals are bundled here, not apart: they hook into this Preact's options (one Preact).
import { h } from "preact";
import htm from "htm";

export * from "preact";
export * from "preact/hooks";
export { batch, computed, effect, signal, untracked, useComputed, useSignal, useSignalEffect } from "@preact/signals";
export { htm };
export const html = htm.bind(h);

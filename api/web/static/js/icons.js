// @ts-check
// Inline SVG icons (stroke icons on a 24px grid); decorative: the buttons carry the labels.
import { html } from "../vendor/preact.js";

const PATHS = {
  plus: "M12 5v14M5 12h14",
  search: "M11 4a7 7 0 1 0 0 14a7 7 0 1 0 0-14zM20 20l-4-4",
  upload: "M12 16V4M7 9l5-5 5 5M4 16v4h16v-4",
  folder: "M3 6a1 1 0 0 1 1-1h5l2 2h9a1 1 0 0 1 1 1v10a1 1 0 0 1-1 1H4a1 1 0 0 1-1-1z",
  chevron: "M9 6l6 6-6 6",
  dots: "M5 12h.01M12 12h.01M19 12h.01",
  brain:
    "M9 4a3 3 0 0 0-3 3 3 3 0 0 0-2 5 3 3 0 0 0 2 5 3 3 0 0 0 6 1V6a2 2 0 0 0-3-2zM15 4a3 3 0 0 1 3 3 3 3 0 0 1 2 5 3 3 0 0 1-2 5 3 3 0 0 1-6 1",
  gear: "M12 9a3 3 0 1 0 0 6a3 3 0 1 0 0-6zM12 2v3M12 19v3M4.2 4.2l2.1 2.1M17.7 17.7l2.1 2.1M2 12h3M19 12h3M4.2 19.8l2.1-2.1M17.7 6.3l2.1-2.1",
  trash: "M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3",
  pin: "M9 4h6l-1 6 3 3H7l3-3zM12 13v7",
  stop: "M7 7h10v10H7z",
  send: "M4 12l16-8-6 16-2-7z",
  image: "M4 5h16v14H4zM4 16l5-5 4 4 3-3 4 4M15 9h.01",
  star: "M12 3l2.7 5.6 6.1.9-4.4 4.3 1 6.1L12 17l-5.4 2.9 1-6.1-4.4-4.3 6.1-.9z",
  retry: "M4 12a8 8 0 1 0 3-6.2M4 4v5h5",
  close: "M6 6l12 12M18 6L6 18",
  signout: "M15 4h4v16h-4M10 8l-4 4 4 4M6 12h10",
  menu: "M4 6h16M4 12h16M4 18h16",
  clock: "M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18zM12 7v5l3 2",
  archive: "M3 5h18v4H3zM5 9v10h14V9M10 13h4",
  user: "M12 4a4 4 0 1 0 0 8a4 4 0 1 0 0-8zM4 21a8 8 0 0 1 16 0",
  ghost: "M6 20V10a6 6 0 0 1 12 0v10l-2-2-2 2-2-2-2 2-2-2zM10 10h.01M14 10h.01",
  copy: "M9 9h11v11H9zM5 15H4V4h11v1",
  check: "M5 12l5 5L20 7",
  edit: "M4 20h4L19 9l-4-4L4 16zM13 7l4 4",
  fork: "M6 3a2 2 0 1 0 0 4a2 2 0 1 0 0-4zM18 3a2 2 0 1 0 0 4a2 2 0 1 0 0-4zM12 17a2 2 0 1 0 0 4a2 2 0 1 0 0-4zM6 7v1a4 4 0 0 0 4 4h4a4 4 0 0 0 4-4V7M12 12v5",
  docs: "M6 3h9l4 4v14H6zM14 3v5h5M9 13h7M9 17h7",
};

/** @typedef {keyof typeof PATHS} IconName */

/** @param {{ name: IconName, size?: number, filled?: boolean }} props */
export function Icon({ name, size = 18, filled = false }) {
  return html`<svg class="icon" width=${size} height=${size} viewBox="0 0 24 24" aria-hidden="true"
    focusable="false" fill=${filled ? "currentColor" : "none"} stroke="currentColor"
    stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d=${PATHS[name]} /></svg>`;
}

/** @param {{ label?: string }} props */
export function Spinner({ label = "Loading" }) {
  return html`<span class="spinner" role="status" aria-label=${label}></span>`;
}

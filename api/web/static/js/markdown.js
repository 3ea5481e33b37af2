// @ts-check
// Markdown from the model or a user, rendered to HTML that is safe to put in the page:
// marked turns it into HTML (raw HTML escaped as text), DOMPurify removes whatever could still
// run (javascript: links...), then code blocks are highlighted (highlight.js escapes its input).
import { html, useEffect, useRef } from "../vendor/preact.js";
import { DOMPurify, Marked } from "../vendor/markdown.js";
import hljs from "../vendor/highlight.js";
import { copyText } from "./util.js";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escape = (/** @type {string} */ text) =>
  text.replace(/[&<>"']/g, (c) => ESCAPES[/** @type {keyof typeof ESCAPES} */ (c)]);

// Raw HTML in a message is shown as the text it is, never parsed as markup: an answer that
// quotes `<img onerror=...>` shows that, and no element with a handler is ever built (even
// inside the sanitizer).
const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: { html: (token) => escape(token.text ?? token.raw ?? "") },
});

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

export function toSafeHtml(/** @type {string | null | undefined} */ markdown) {
  const raw = marked.parse(markdown || "", { async: false });
  return DOMPurify.sanitize(raw, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe"],
    FORBID_ATTR: ["style"],
  });
}

/** Each code block gets a button copying its code (added after sanitizing: the Markdown
 * itself can make no button). */
function addCopyButtons(/** @type {HTMLElement} */ element) {
  for (const pre of element.querySelectorAll("pre")) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy-code small";
    button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy code");
    button.addEventListener("click", () =>
      copyText(pre.querySelector("code")?.textContent ?? pre.textContent ?? "").then(
        () => (button.textContent = "Copied"),
        () => (button.textContent = "Not copied"),
      ),
    );
    const block = document.createElement("div");
    block.className = "code-block";
    pre.replaceWith(block);
    block.append(button, pre);
  }
}

/** @param {{ text: string | null | undefined, className?: string, copyCode?: boolean }} props */
export function Markdown({ text, className = "markdown", copyCode = false }) {
  const ref = useRef(/** @type {HTMLDivElement | null} */ (null));
  useEffect(() => {
    const element = /** @type {HTMLDivElement} */ (ref.current);
    element.innerHTML = toSafeHtml(text);
    for (const block of /** @type {NodeListOf<HTMLElement>} */ (element.querySelectorAll("pre code"))) {
      if (block.className && !/language-/.test(block.className)) continue;
      const language = (block.className.match(/language-([\w-]+)/) || [])[1];
      if (language && !hljs.getLanguage(language)) continue;
      hljs.highlightElement(block);
    }
    if (copyCode) addCopyButtons(element);
  }, [text]);
  return html`<div class=${className} ref=${ref}></div>`;
}

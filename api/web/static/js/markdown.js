// Markdown from the model or a user, rendered to HTML that is safe to put in the page:
// marked turns it into HTML, DOMPurify removes whatever could run (scripts, event handlers,
// javascript: links...), then code blocks are highlighted (highlight.js escapes its input).
import { html, useEffect, useRef } from "../vendor/preact.js";
import { DOMPurify, Marked } from "../vendor/markdown.js";
import hljs from "../vendor/highlight.js";

const marked = new Marked({ gfm: true, breaks: true });

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

export function toSafeHtml(markdown) {
  const raw = marked.parse(markdown || "", { async: false });
  return DOMPurify.sanitize(raw, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe"],
    FORBID_ATTR: ["style"],
  });
}

export function Markdown({ text, className = "markdown" }) {
  const ref = useRef(null);
  useEffect(() => {
    const element = ref.current;
    element.innerHTML = toSafeHtml(text);
    for (const block of element.querySelectorAll("pre code")) {
      if (block.className && !/language-/.test(block.className)) continue;
      const language = (block.className.match(/language-([\w-]+)/) || [])[1];
      if (language && !hljs.getLanguage(language)) continue;
      hljs.highlightElement(block);
    }
  }, [text]);
  return html`<div class=${className} ref=${ref}></div>`;
}

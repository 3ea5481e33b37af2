// Markdown to HTML (marked) and the sanitizer every render goes through (DOMPurify).
export { Marked, marked } from "marked";
export { default as DOMPurify } from "dompurify";

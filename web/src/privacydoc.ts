// The privacy notice, docs/privacy.md, as HTML for the Privacy page (pages/privacy.tsx), which
// imports this module on demand: the text and its renderer, marked, stay out of the main bundle.
import { Marked } from 'marked';
import text from '../../docs/privacy.md?raw';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const md = new Marked({
  gfm: true,
  renderer: {
    // Raw HTML in the Markdown is shown as text, never passed through.
    html: ({ text }) => escapeHtml(text),
    // A relative link names another file of the repository (docs/api.md), which the console
    // does not serve: only its text is kept. Absolute http(s) links render as usual.
    link(token) {
      return /^https?:\/\//i.test(token.href) ? false : this.parser.parseInline(token.tokens);
    },
  },
});

/** renderMarkdown renders Markdown to HTML, escaping raw HTML; each table scrolls on its own. */
export function renderMarkdown(src: string): string {
  return md
    .parse(src, { async: false })
    .replace(/<table>/g, '<div class="table-wrap"><table>')
    .replace(/<\/table>/g, '</table></div>');
}

/** privacyHtml is docs/privacy.md as HTML. */
export const privacyHtml = renderMarkdown(text);

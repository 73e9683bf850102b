// A path router under the console's base (/app/): the Go handler and S3 answer every unknown
// path under it with index.html, so links are ordinary paths and the back button works.
import { useEffect, useState } from 'preact/hooks';

/** BASE is where the console is served, with its trailing slash. */
export const BASE: string = import.meta.env.BASE_URL;

/**
 * REFERENCE is the API reference page, served beside the console but outside BASE
 * (docs/api.md §11.3): links to it are ordinary page loads, which onLinkClick leaves alone.
 */
export const REFERENCE = '/docs';

/** routePath is the path after the base, without leading or trailing slashes. */
export function routePath(pathname: string = location.pathname): string {
  const p = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname.replace(/^\//, '');
  return p.replace(/\/+$/, '');
}

/** href builds a link to a console path. */
export function href(path: string): string {
  return BASE + path.replace(/^\//, '');
}

/** navigate moves to a console path without a reload. */
export function navigate(path: string, replace = false) {
  const url = href(path);
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  dispatchEvent(new PopStateEvent('popstate'));
}

/** useRoute re-renders on navigation and returns the current console path. */
export function useRoute(): string {
  const [path, setPath] = useState(routePath());
  useEffect(() => {
    const on = () => setPath(routePath());
    addEventListener('popstate', on);
    return () => removeEventListener('popstate', on);
  }, []);
  return path;
}

/** onLinkClick turns a click on an in-console <a> into navigate, keeping modified clicks. */
export function onLinkClick(e: MouseEvent) {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element | null)?.closest?.('a');
  // In-page anchors (the skip link) and other targets keep the browser's behaviour.
  if (!a || a.target || !a.href || a.getAttribute('href')?.startsWith('#')) return;
  const url = new URL(a.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(BASE)) return;
  e.preventDefault();
  navigate(routePath(url.pathname));
}

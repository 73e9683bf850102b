// The privacy notice (docs/privacy.md), at /app/privacy for everyone, signed in or not, and
// linked from every page's footer. The text and its renderer come with ../privacydoc.ts, loaded
// when the page opens.
import { Loading, useLoad } from '../ui';

/** Privacy shows the privacy notice; its own H1 is the page's heading. */
export function Privacy() {
  const load = useLoad(() => import('../privacydoc').then((m) => m.privacyHtml), []);
  return <Loading load={load}>{(html) => <article class="doc" dangerouslySetInnerHTML={{ __html: html }} />}</Loading>;
}

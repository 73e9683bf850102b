import { render } from 'preact';
import { afterEach, beforeEach } from 'vitest';

/**
 * mountPoint gives each test of the calling file a fresh element in the document to render
 * into (`mount.el`), unmounted and removed after the test.
 */
export function mountPoint(): { el: HTMLElement } {
  const mount = { el: document.createElement('div') };
  beforeEach(() => {
    mount.el = document.createElement('div');
    document.body.appendChild(mount.el);
  });
  afterEach(() => {
    render(null, mount.el);
    mount.el.remove();
  });
  return mount;
}

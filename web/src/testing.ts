import { h, render, type VNode } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, beforeEach, expect } from 'vitest';
import type { Client, Organisation, Role } from './api';
import { AppContext, type Ctx } from './context';

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

/** settle lets pending promises and timers of the page run, and renders what they changed. */
export async function settle() {
  await act(async () => {
    await new Promise((r) => setTimeout(r, 0));
  });
}

/** click clicks b, which must exist, then settles. */
export async function click(b: HTMLElement | undefined) {
  expect(b).toBeDefined();
  await act(async () => {
    b!.click();
  });
  await settle();
}

/**
 * pageHelpers returns the helpers the page tests use, bound to mount: each looks inside
 * mount.el unless given another element (`within`).
 */
export function pageHelpers(mount: { el: HTMLElement }) {
  return {
    /**
     * renderPage renders page for organisation org_1 ("Acme", free plan), where the user has
     * role, with client as the context's client (only the methods the page calls), and settles.
     * ctx adds what else of the context the page uses (me, refreshOrgs...).
     */
    async renderPage(page: (org: Organisation) => VNode, role: Role, client: Partial<Client>, ctx: Partial<Ctx> = {}) {
      const org: Organisation = { org_id: 'org_1', name: 'Acme', plan: 'free', role };
      const value = { ...ctx, client: client as Client } as Ctx;
      await act(async () => {
        render(h(AppContext.Provider, { value }, page(org)), mount.el);
      });
      await settle();
    },

    /** button is the button whose whole text is name, or undefined. */
    button(name: string, within: ParentNode = mount.el): HTMLButtonElement | undefined {
      return [...within.querySelectorAll('button')].find((b) => b.textContent === name);
    },

    /** testid is the element with data-testid id, or null. */
    testid(id: string): HTMLElement | null {
      return mount.el.querySelector(`[data-testid="${id}"]`);
    },

    /** type sets the value of the input named name, as if typed. */
    async type(name: string, value: string, within: ParentNode = mount.el) {
      const el = within.querySelector(`input[name="${name}"]`) as HTMLInputElement;
      await act(async () => {
        el.value = value;
        el.dispatchEvent(new Event('input', { bubbles: true }));
      });
    },

    /** submit submits the first form, then settles. */
    async submit(within: ParentNode = mount.el) {
      await act(async () => {
        within.querySelector('form')!.dispatchEvent(new Event('submit', { cancelable: true, bubbles: true }));
      });
      await settle();
    },
  };
}

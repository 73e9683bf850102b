// Entry point: read the deployment's config.json (the API address), then render. The app
// checks the session before it renders anything signed-in (no flash of unauthenticated content).
import { render } from 'preact';
import { App, captureInvite } from './app';
import './style.css';

interface Config {
  api_base?: string;
}

async function loadConfig(): Promise<Config> {
  try {
    const res = await fetch(import.meta.env.BASE_URL + 'config.json', { cache: 'no-store' });
    if (res.ok) return (await res.json()) as Config;
  } catch {
    // No config: the API is on the console's own origin.
  }
  return {};
}

captureInvite();
loadConfig().then((cfg) => {
  const base = cfg.api_base || import.meta.env.VITE_API_BASE || '';
  render(<App apiBase={base} />, document.getElementById('app')!);
});

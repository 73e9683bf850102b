/// <reference types="vitest/config" />
import { readFileSync } from 'node:fs';
import { defineConfig, type Plugin } from 'vite';

// referenceLicences ships the licences of the bundled Swagger UI (Apache-2.0, with its NOTICE)
// and of the libraries inside its prebuilt bundle, which the minified script no longer carries,
// and, as console-licences.txt, those of the console's own libraries, whose minified code
// drops them too (qrcode-generator ships no licence file).
function referenceLicences(): Plugin {
  const dir = 'node_modules/swagger-ui-dist/';
  const console = ['marked', 'leaflet', 'preact', 'uplot'];
  return {
    name: 'reference-licences',
    generateBundle() {
      this.emitFile({
        type: 'asset',
        fileName: 'reference-licences.txt',
        source: ['NOTICE', 'LICENSE', 'swagger-ui-es-bundle.js.LICENSE.txt'].map((f) => readFileSync(dir + f, 'utf8')).join('\n\n'),
      });
      this.emitFile({
        type: 'asset',
        fileName: 'console-licences.txt',
        source: console.map((p) => `${p}\n\n${readFileSync(`node_modules/${p}/LICENSE`, 'utf8')}`).join('\n\n'),
      });
    },
  };
}

// Two pages: the console (index.html) and the API reference (reference.html, served at /docs).
// Both are served under /app/ (by `go run .` from the embedded dist/, and from S3 on AWS), so
// every asset URL carries that base. Hashed file names make the build reproducible: the
// committed dist/ must equal a fresh `npm ci && npm run build` (scripts/test.sh checks).
export default defineConfig({
  base: '/app/',
  plugins: [referenceLicences()],
  // `npm run dev` proxies the API to a running service, so the console stays same-origin.
  server: {
    // The Privacy page imports ../docs/privacy.md (`?raw`), outside web/: the dev server and
    // vitest read it only from an allowed folder (a file entry does not cover its `?raw` id).
    fs: { allow: ['.', '../docs'] },
    proxy: Object.fromEntries(
      ['/console', '/v1', '/health', '/openapi.json'].map((p) => [p, process.env.ROADEVENTS_API ?? 'http://127.0.0.1:8080']),
    ),
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: true,
    rolldownOptions: {
      input: { index: 'index.html', reference: 'reference.html' },
    },
    // The reference's renderer is one prebuilt bundle of about 1.5 MB (430 kB compressed),
    // loaded by /docs only; it cannot be split, so the warning would say nothing new.
    chunkSizeWarningLimit: 1600,
  },
  test: {
    environment: 'happy-dom',
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx'],
  },
});

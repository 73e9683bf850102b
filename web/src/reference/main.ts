// The API reference at /docs: Swagger UI, bundled here at build time, renders the service's
// own /openapi.json. Nothing is loaded from another origin, and the page runs under the
// console's Content-Security-Policy (docs/api.md §11.3).
import SwaggerUI from 'swagger-ui-dist/swagger-ui-es-bundle.js';
import 'swagger-ui-dist/swagger-ui.css';
import './reference.css';

SwaggerUI({
  // The document of the origin the page is served from: on AWS and under `go run .` the API,
  // the console and this page share one origin.
  url: '/openapi.json',
  dom_id: '#reference',
  // Never render a document named in the address bar (?url=, ?configUrl=): this page shows
  // the service's own interface only.
  queryConfigEnabled: false,
  // No badge from the public validator, which would be a request to another origin.
  validatorUrl: null,
  deepLinking: true,
  // A key typed into "Authorize" stays in this tab's memory, never in localStorage.
  persistAuthorization: false,
});

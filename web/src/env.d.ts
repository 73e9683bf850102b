/// <reference types="vite/client" />
interface ImportMetaEnv {
  /** VITE_API_BASE is the API's origin when it is not the console's own (build-time default). */
  readonly VITE_API_BASE?: string;
}
declare module 'uplot/dist/uPlot.min.css';
// The prebuilt Swagger UI bundle ships no types; the reference page calls it once.
declare module 'swagger-ui-dist/swagger-ui-es-bundle.js' {
  const SwaggerUI: (options: Record<string, unknown>) => unknown;
  export default SwaggerUI;
}
// Leaflet's ES module build: the same API as the package's main, which @types/leaflet types.
declare module 'leaflet/dist/leaflet-src.esm.js' {
  export * from 'leaflet';
}

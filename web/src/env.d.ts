/// <reference types="vite/client" />
interface ImportMetaEnv {
  /** VITE_API_BASE is the API's origin when it is not the console's own (build-time default). */
  readonly VITE_API_BASE?: string;
}
declare module 'uplot/dist/uPlot.min.css';

export {
  type OpenTelemetryListenerOptions,
  openTelemetryListener,
  type RunEventListener,
} from './open-telemetry-listener.js';

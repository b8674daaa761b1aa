import type { Plugin } from '@stepwise/core';

export interface HelloPluginOptions {
  /** The word before the name. Default "Hello". */
  readonly greeting?: string;
}

/** The plugin, configured. Hosts call it with the options from their configuration. */
export declare function createHelloPlugin(options?: HelloPluginOptions): Plugin;

/** `createHelloPlugin()`: tool `hello` (alias `greet`). */
declare const plugin: Plugin;
export default plugin;

import type { Artifact } from '@stepwise/core';
import type { McpSandboxStatus } from './server-launch.js';

/** One item of a tool result, with binary payloads replaced by the name of the artifact that holds them. */
export type McpContentSummary =
  | { readonly type: 'text'; readonly text: string }
  | {
      readonly type: 'image' | 'audio' | 'resource';
      readonly mimeType?: string;
      readonly uri?: string;
      /** Name of the artifact recorded with the execution. */
      readonly artifact: string;
    }
  | { readonly type: 'resource_link'; readonly uri: string; readonly name: string; readonly mimeType?: string }
  | { readonly type: string; readonly [key: string]: unknown };

/** What an MCP tool step outputs. */
export interface McpToolOutput {
  /** Every text item, joined with newlines ("" when there is none). */
  readonly text: string;
  /** The result's `structuredContent`, when the server sent one. */
  readonly structured?: Record<string, unknown>;
  /** Every content item in order; images, audio and embedded resources point at their artifact. */
  readonly content: readonly McpContentSummary[];
  /** How the stdio server that answered runs: in the OS sandbox or not (absent for HTTP servers). */
  readonly sandbox?: McpSandboxStatus;
}

interface RawContent {
  readonly type: string;
  readonly text?: string;
  readonly data?: string;
  readonly mimeType?: string;
  readonly uri?: string;
  readonly name?: string;
  readonly resource?: { uri: string; text?: string; blob?: string; mimeType?: string };
}

const EXTENSIONS: Readonly<Record<string, string>> = {
  'image/png': '.png',
  'image/jpeg': '.jpg',
  'image/gif': '.gif',
  'image/webp': '.webp',
  'image/svg+xml': '.svg',
  'audio/wav': '.wav',
  'audio/mpeg': '.mp3',
  'text/plain': '.txt',
  'application/json': '.json',
};

/**
 * Splits a `tools/call` result into the step output and artifacts. Binary payloads (images,
 * audio, blob resources) are recorded base64-encoded, as the server sent them; text resources verbatim.
 */
export function toolOutput(
  tool: string,
  result: { content?: readonly unknown[]; structuredContent?: Record<string, unknown> },
  addArtifact: (artifact: Artifact) => void,
): McpToolOutput {
  const texts: string[] = [];
  const content: McpContentSummary[] = [];
  (result.content ?? []).forEach((raw, index) => {
    const item = raw as RawContent;
    const artifactName = (mimeType: string | undefined) => `${tool}-${index}${EXTENSIONS[mimeType ?? ''] ?? ''}`;
    if (item.type === 'text') {
      texts.push(item.text ?? '');
      content.push({ type: 'text', text: item.text ?? '' });
    } else if ((item.type === 'image' || item.type === 'audio') && typeof item.data === 'string') {
      const name = artifactName(item.mimeType);
      addArtifact({
        kind: item.type,
        name,
        content: item.data,
        ...(item.mimeType ? { mediaType: item.mimeType } : {}),
      });
      content.push({ type: item.type, artifact: name, ...(item.mimeType ? { mimeType: item.mimeType } : {}) });
    } else if (item.type === 'resource' && item.resource) {
      const { uri, mimeType } = item.resource;
      const name = artifactName(mimeType);
      addArtifact({
        kind: 'resource',
        name,
        content: item.resource.text ?? item.resource.blob ?? '',
        ...(mimeType ? { mediaType: mimeType } : {}),
      });
      content.push({ type: 'resource', uri, artifact: name, ...(mimeType ? { mimeType } : {}) });
    } else {
      // resource_link and item types newer than this package: small, so kept as sent.
      content.push(item as McpContentSummary);
    }
  });
  return {
    text: texts.join('\n'),
    ...(result.structuredContent === undefined ? {} : { structured: result.structuredContent }),
    content,
  };
}

/** The text of an error result, for the ToolError message. */
export function errorText(result: { content?: readonly unknown[] }): string {
  return (result.content ?? [])
    .map((raw) => raw as RawContent)
    .filter((item) => item.type === 'text' && item.text)
    .map((item) => item.text)
    .join('\n');
}

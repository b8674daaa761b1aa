/**
 * Counts tokens to keep prompts inside the context budget. Exact for OpenAI's o200k models,
 * a close estimate for others (their tokenizers differ by a few percent).
 */
export interface TokenEstimator {
  readonly name: string;
  count(text: string): number;
  /** The first `head` and the last `tail` tokens of `text`, as text. */
  ends(text: string, head: number, tail: number): { readonly head: string; readonly tail: string };
}

/** Four characters per token: the documented fallback when no tokenizer can be loaded. */
export const heuristicEstimator: TokenEstimator = {
  name: 'heuristic',
  count: (text) => Math.ceil(text.length / 4),
  ends: (text, head, tail) => ({
    head: text.slice(0, head * 4),
    tail: tail > 0 ? text.slice(Math.max(head * 4, text.length - tail * 4)) : '',
  }),
};

interface Tokenizer {
  countTokens(text: string): number;
  encode(text: string): number[];
  decode(tokens: readonly number[]): string;
}

let loading: Promise<TokenEstimator> | undefined;

/**
 * The gpt-tokenizer estimator (o200k_base), imported on first use because its tables take a
 * few hundred milliseconds to load. gpt-tokenizer is an optional peer dependency (tens of MB
 * installed): when it is not installed, or cannot be loaded, this is the heuristic.
 */
export function loadTokenEstimator(): Promise<TokenEstimator> {
  loading ??= (import('gpt-tokenizer') as Promise<Tokenizer>).then(
    (tokenizer): TokenEstimator => ({
      name: 'gpt-tokenizer',
      count: (text) => (text.length === 0 ? 0 : tokenizer.countTokens(text)),
      ends: (text, head, tail) => {
        const tokens = tokenizer.encode(text);
        return {
          head: tokenizer.decode(tokens.slice(0, head)),
          tail: tail > 0 ? tokenizer.decode(tokens.slice(Math.max(head, tokens.length - tail))) : '',
        };
      },
    }),
    () => heuristicEstimator,
  );
  return loading;
}

import type { TokenTableSource } from "../shared/tokens";

/**
 * Token tables served by the Workers static assets binding (assets/tokenizer/*.bin). They are not part
 * of the Worker bundle, so start-up does not pay for them; only the configured encoding's table is
 * fetched, once per isolate. The host is ignored by the binding.
 */
export function assetTokenTables(assets: Fetcher): TokenTableSource {
  return async (encoding) => {
    const response = await assets.fetch(`https://assets.invalid/tokenizer/${encoding}.bin`);
    if (!response.ok) {
      throw new Error(
        `Configuration error: token table tokenizer/${encoding}.bin not found in the ASSETS binding (${response.status}); deploy with assets/tokenizer`,
      );
    }
    return response.arrayBuffer();
  };
}

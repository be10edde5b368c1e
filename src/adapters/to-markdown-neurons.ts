import { neuronsFor } from "./model-prices";
import { estimateTokens } from "./workers-ai-json-model";

// What Workers AI's toMarkdown bills, which its answer does not say. Most conversions are free; an image goes through
// an object-detection model (@cf/facebook/detr-resnet-50, which the pricing page does not list: counted 0) and then
// @cf/google/gemma-3-12b-it, which describes it (developers.cloudflare.com/workers-ai/features/markdown-conversion/
// how-it-works). Its neurons are estimated from that model's published price: the image's tokens and the prompt in, the
// description out.

/** The model toMarkdown describes images with. */
export const IMAGE_DESCRIPTION_MODEL = "@cf/google/gemma-3-12b-it";
/** Gemma 3 reads an image (resized to 896x896) as 256 tokens; its prompt, with the detected objects, about 150 more. */
export const IMAGE_INPUT_TOKENS = 256 + 150;

interface ConversionAnswer {
  format?: string;
  mimeType?: string;
  mimetype?: string;
  data?: string;
}

/** Neurons a toMarkdown answer (one result or a list) is estimated to have cost: its images' descriptions. */
export function toMarkdownNeurons(answer: unknown): number {
  const results = (Array.isArray(answer) ? answer : [answer]) as (ConversionAnswer | null)[];
  let neurons = 0;
  for (const result of results) {
    if (result?.format !== "markdown") continue;
    const type = result.mimeType ?? result.mimetype ?? "";
    if (!type.startsWith("image/")) continue;
    // From the description itself: the answer's `tokens` is an estimate too, and often 0.
    const tokensOut = estimateTokens(typeof result.data === "string" ? result.data.length : 0);
    neurons += neuronsFor(IMAGE_DESCRIPTION_MODEL, IMAGE_INPUT_TOKENS, tokensOut);
  }
  return neurons;
}

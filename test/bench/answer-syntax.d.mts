// Types of answer-syntax.mjs for the noisy test model.
export const SYNTAX_SLIPS: Record<string, (memories: Record<string, unknown>[]) => string>;

import { z } from "zod";
import { setPinned } from "../core/working-set/gc";
import { ANNOTATIONS, defineTool } from "./define-tool";
import { segmentIdsParam } from "./gc-params";
import { segmentErrorSchema } from "./gc-views";
import { projectName } from "./params";

// Pinning: segments no pruning may take.

const pinInput = z.object({ project_id: projectName, segment_ids: segmentIdsParam });

export const contextGcPin = defineTool({
  name: "context_gc_pin",
  category: "gc",
  title: "Pin segments",
  description:
    "Pin segments to protect them from pruning. Pinned segments are never pruning candidates, and context_gc_prune and context_stash " +
    "leave them in place. Unknown ids come back in errors (SEGMENT_NOT_FOUND). Pinning twice is harmless.",
  input: pinInput,
  output: z.object({ pinned_segments: z.array(z.string()), errors: z.array(segmentErrorSchema) }),
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => {
    const outcome = await setPinned(ctx.scope, input.project_id, input.segment_ids, true);
    return { pinned_segments: outcome.segmentIds, errors: outcome.errors };
  },
});

export const contextGcUnpin = defineTool({
  name: "context_gc_unpin",
  category: "gc",
  title: "Unpin segments",
  description:
    "Unpin segments to allow pruning. They can become pruning candidates again. Unknown ids come back in errors (SEGMENT_NOT_FOUND).",
  input: pinInput,
  output: z.object({ unpinned_segments: z.array(z.string()), errors: z.array(segmentErrorSchema) }),
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => {
    const outcome = await setPinned(ctx.scope, input.project_id, input.segment_ids, false);
    return { unpinned_segments: outcome.segmentIds, errors: outcome.errors };
  },
});

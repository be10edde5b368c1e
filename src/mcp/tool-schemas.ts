import { z } from "zod";
import type { AnyTool } from "../tools/define-tool";
import { portableSchema } from "./portable-schema";

export interface ListedTool {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations: AnyTool["annotations"] & { title: string };
}

const cache = new Map<string, ListedTool>();

/** The tools/list entry for a tool, rendered from its zod schemas once per isolate, in portable JSON Schema. */
export function listedTool(tool: AnyTool): ListedTool {
  let listed = cache.get(tool.name);
  if (!listed) {
    listed = {
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: jsonSchema(tool.input, "input"),
      outputSchema: jsonSchema(wrapNonObject(tool.output), "output"),
      annotations: { title: tool.title, ...tool.annotations },
    };
    cache.set(tool.name, listed);
  }
  return listed;
}

/** MCP structured content must be an object: other results travel as `{ result }`. */
export function structuredContent(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : { result: value };
}

function wrapNonObject(schema: z.ZodType): z.ZodType {
  return schema instanceof z.ZodObject ? schema : z.object({ result: schema });
}

function jsonSchema(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  return portableSchema(rest);
}

import { z } from "zod";
import { MAX_ALIASES, setSubjectAliases } from "../core/extraction/aliases";
import { readProjectSettings, writeProjectSettings } from "../core/extraction/settings";
import { ANNOTATIONS, defineTool, type ToolContext } from "./define-tool";
import { projectName } from "./params";

// Whether a project learns from its conversations, and how it names the people in them (docs/extraction.md).

const name = z.string().trim().min(1).max(200);

const settingsOutput = z.object({
  project_id: z.string(),
  extract: z.boolean().nullable().describe("The project's own setting; null: the deployment's default."),
  extracting: z.boolean().describe("Whether logged turns are extracted now (setting, default and model together)."),
  default_subject: z.string().nullable(),
  subject_aliases: z.record(z.string(), z.string()).describe("Other names of subjects: alias to subject."),
  model: z.string().nullable().describe("The extraction model; null: the deployment has none (LLM=off)."),
});

export const memorySettings = defineTool({
  name: "memory_settings",
  category: "memory",
  title: "Memory settings of a project",
  description:
    "Read or change a project's memory settings: whether logged conversation turns are extracted into memories " +
    "(`extract`; null returns to the deployment's default), the default subject whose profile " +
    'memory_context_build puts first, and `subject_aliases` ({"Mel": "Melanie"}: what is learned about Mel is ' +
    "filed under Melanie, whose memories under Mel move there; each subject must have memories; {} clears them). " +
    "Without changes it only reads them.",
  input: z.object({
    project_id: projectName.default("default"),
    extract: z.boolean().nullable().optional(),
    default_subject: name.nullable().optional(),
    subject_aliases: z
      .record(name, name)
      .optional()
      .describe(`Alias to subject, at most ${MAX_ALIASES}; replaces the project's aliases ({} clears them).`),
  }),
  output: settingsOutput,
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => {
    // Aliases first: a refused alias leaves every setting of the call unwritten.
    if (input.subject_aliases !== undefined)
      await setSubjectAliases(ctx.scope, input.project_id, input.subject_aliases);
    const changes = { extract: input.extract, defaultSubject: input.default_subject };
    const changing = changes.extract !== undefined || changes.defaultSubject !== undefined;
    const stopsExtraction =
      changes.extract === false || (changes.extract === null && !ctx.services.config.extraction.byDefault);
    const settings = changing
      ? await writeProjectSettings(ctx.scope, input.project_id, changes, stopsExtraction)
      : await readProjectSettings(ctx.scope, input.project_id);
    return settingsView(ctx, settings);
  },
});

function settingsView(
  ctx: ToolContext,
  settings: Awaited<ReturnType<typeof readProjectSettings>>,
): z.output<typeof settingsOutput> {
  const model = ctx.services.model;
  return {
    project_id: settings.project,
    extract: settings.extract,
    extracting: model !== null && (settings.extract ?? ctx.services.config.extraction.byDefault),
    default_subject: settings.defaultSubject,
    subject_aliases: settings.subjectAliases,
    model: model?.name ?? null,
  };
}

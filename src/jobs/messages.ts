/** Messages on the JOBS queue. Each names its tenant; consumers open a scope for it. */
export type JobMessage = { type: "embed"; tenantId: string; itemIds: string[] };

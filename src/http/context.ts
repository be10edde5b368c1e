import type { AuthenticatedKey } from "../control/tenants";
import type { TenantScope } from "../db/scope";
import type { Env } from "../env";
import type { Services } from "../ports";

/** Hono's typing for this app: bindings plus what the auth middleware puts on the context. */
export interface AppBindings {
  Bindings: Env;
  Variables: { caller: AuthenticatedKey; scope: TenantScope; services: Services };
}

import type { D1Migration } from "cloudflare:test";
import type { Env as AppEnv } from "../src/env";

declare global {
  namespace Cloudflare {
    interface Env extends AppEnv {
      /** migrations/shard, for every SHARD_* binding. */
      TEST_MIGRATIONS: D1Migration[];
      /** migrations/control, for CONTROL. */
      TEST_CONTROL_MIGRATIONS: D1Migration[];
    }
    interface GlobalProps {
      mainModule: typeof import("../src/index");
    }
  }
}

-- Tenants, keys and job failures live in the control database (migrations/control); a data shard keeps only
-- what tenants store. No deployment held data before the split (the product had not been deployed).
DROP TABLE `api_keys`;--> statement-breakpoint
DROP TABLE `job_failures`;--> statement-breakpoint
DROP TABLE `tenants`;
